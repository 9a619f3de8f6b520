package e2e

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/portcullis/portcullis/e2e/harness"
)

// How soon a withdrawn key is refused: within a couple of key set
// fetches (jwksRefreshInterval 2s), not at the next restart.
const kcWithdrawnKeyWithin = 15 * time.Second

// TestKeycloak runs the OIDC auth path against a real Keycloak (HTTPS
// issuer with the test's CA, realm, clients, users and groups made
// through its admin API), behind the real Envoy and control plane. One
// Keycloak serves every subtest: it takes most of the test's time to
// start.
func TestKeycloak(t *testing.T) {
	s := startKeycloakStack(t)
	harness.Eventually(t, 30*time.Second, func() error {
		p, err := newKCClient(t, s).try(kcApp + "/")
		if err != nil {
			return err
		}
		if p.StatusCode != http.StatusFound || !strings.HasPrefix(p.Header.Get("Location"), s.issuer+"/protocol/openid-connect/auth?") {
			return fmt.Errorf("GET /: status %d Location %q: %.200s", p.StatusCode, p.Header.Get("Location"), p.body)
		}
		return nil
	})
	alice := newKCClient(t, s)
	if !t.Run("sign-in through Keycloak's login form returns to the original URL", func(t *testing.T) {
		kcSignIn(t, alice.on(t))
	}) {
		t.FailNow()
	}
	t.Run("claims to headers and group rules", func(t *testing.T) { kcClaims(t, s, alice.on(t)) })
	t.Run("bearer tokens: valid, wrong audience, wrong issuer, alg none, ID token", func(t *testing.T) { kcBearer(t, s) })
	t.Run("service-account tokens are accepted", func(t *testing.T) { kcServiceAccount(t, s) })
	t.Run("an unverified email is refused, with the claim filter too", func(t *testing.T) { kcUnverified(t, s) })
	t.Run("two sign-ins at once in one browser", func(t *testing.T) { kcTwoTabs(t, s) })
	t.Run("parallel sign-ins", func(t *testing.T) { kcParallel(t, s) })
	// While the refresh case waits for the tokens to expire.
	t.Run("at once", func(t *testing.T) {
		t.Run("refresh after access-token expiry; an expired bearer token", func(t *testing.T) {
			t.Parallel()
			kcRefresh(t, s, alice.on(t))
		})
		t.Run("headless browser: Keycloak's login page, the error page", func(t *testing.T) {
			t.Parallel()
			kcBrowser(t, s)
		})
		t.Run("a user in 1,000 groups", func(t *testing.T) {
			t.Parallel()
			kcManyGroupsUser(t, s)
		})
	})
	t.Run("key rotation: a new key is taken at once, a withdrawn one dropped", func(t *testing.T) { kcKeyRotation(t, s) })
	t.Run("RP-initiated logout through Keycloak's end-session endpoint", func(t *testing.T) { kcLogout(t, s, alice.on(t)) })
}

func kcSignIn(t *testing.T, alice *kcClient) {
	f := alice.signIn(kcApp+"/hello/page?x=1", "alice")
	if f.authorize == nil {
		t.Fatalf("not sent to Keycloak: status %d: %.300s", f.final.StatusCode, f.final.body)
	}
	q := f.authorize.Query()
	if q.Get("code_challenge_method") != "S256" || q.Get("redirect_uri") != kcApp+"/oauth2/callback" ||
		q.Get("state") == "" || q.Get("nonce") == "" || q.Get("client_id") != kcClientID {
		t.Errorf("authorization request = %v", q)
	}
	e := alice.echo(f.final)
	if e.Path != "/hello/page" || e.Query != "x=1" {
		t.Errorf("came back to %s?%s, want /hello/page?x=1", e.Path, e.Query)
	}
	var names []string
	for _, c := range alice.cookies(kcApp) {
		names = append(names, c.Name)
	}
	if !slices.Contains(names, oidcCookie) {
		t.Errorf("cookies %v, want the session cookie %s", names, oidcCookie)
	}
}

func kcClaims(t *testing.T, s *kcStack, alice *kcClient) {
	e := alice.echo(alice.get(kcApp+"/x", "Auth-Username", "mallory@example.test", "Auth-Subject", "mallory"))
	if err := harness.WantHeaders(e.Headers, map[string]string{
		"Auth-Subject": s.kc.UserID(t, kcRealm, "alice"), "Auth-Username": "alice@example.test",
	}); err != nil {
		t.Error(err)
	}
	groups := strings.Split(e.Headers.Get("Auth-Groups"), ",")
	slices.Sort(groups)
	if !slices.Equal(groups, []string{"admins", "users"}) {
		t.Errorf("Auth-Groups = %q, want admins and users (names, not paths)", e.Headers.Get("Auth-Groups"))
	}
	alice.echo(alice.get(kcApp + "/admin/x"))
	if p := alice.get(kcApp + "/audit/x"); p.StatusCode != http.StatusForbidden {
		t.Errorf("/audit (group auditors): status %d, want 403", p.StatusCode)
	}
}

// kcWantUnauthorized asserts an API client's refusal: 401 with a Bearer
// challenge, never a redirect.
func kcWantUnauthorized(t *testing.T, name string, p *page) {
	t.Helper()
	if p.StatusCode != http.StatusUnauthorized || p.Header.Get("Location") != "" ||
		!strings.HasPrefix(p.Header.Get("WWW-Authenticate"), "Bearer ") {
		t.Errorf("%s: status %d, Location %q, WWW-Authenticate %q; want 401 with a Bearer challenge",
			name, p.StatusCode, p.Header.Get("Location"), p.Header.Get("WWW-Authenticate"))
	}
}

func kcBearer(t *testing.T, s *kcStack) {
	api := newKCClient(t, s)
	user := s.kc.PasswordToken(t, kcRealm, kcCLI, "alice", kcPassword)
	e := api.echo(api.bearer(kcApp+"/api/items", user.AccessToken))
	if err := harness.WantHeaders(e.Headers, map[string]string{
		"Auth-Subject": s.kc.UserID(t, kcRealm, "alice"), "Auth-Username": "alice@example.test",
	}); err != nil {
		t.Error(err)
	}
	refused := map[string]string{
		"wrong audience (another service's token)": s.kc.ClientCredentials(t, kcRealm, kcOther, kcOtherPass),
		"wrong issuer (another realm, same key)":   s.kc.ClientCredentials(t, kcForeign, kcClientID, kcSecret),
		"alg none":                                 algNone(t, user.AccessToken),
		"an ID token (aud portcullis, typ ID)":     kcIDToken(t, s),
		"garbage":                                  "not.a.jwt",
	}
	for name, token := range refused {
		kcWantUnauthorized(t, name, api.bearer(kcApp+"/api/items", token))
	}
	kcWantUnauthorized(t, "no token on an API route", api.get(kcApp+"/api/items"))
}

// algNone is token with alg none and no signature.
func algNone(t *testing.T, token string) string { return withHeader(t, token, "alg", "none", false) }

// kcIDToken is an ID token Keycloak issued to portcullis (aud
// portcullis): the code flow done by hand, with the client's secret.
func kcIDToken(t *testing.T, s *kcStack) string {
	verifier := "e2e-pkce-verifier-" + strings.Repeat("x", 40)
	challenge := base64.RawURLEncoding.EncodeToString(sha256Sum(verifier))
	c := newKCClient(t, s)
	auth := s.issuer + "/protocol/openid-connect/auth?" + urlValues(
		"response_type", "code", "client_id", kcClientID, "redirect_uri", kcApp+"/oauth2/callback",
		"scope", "openid email", "state", "e2e-state", "nonce", "e2e-nonce",
		"code_challenge", challenge, "code_challenge_method", "S256").Encode()
	callback := c.login(mustURL(t, auth), "alice")
	tok := s.kc.Token(t, kcRealm, urlValues("grant_type", "authorization_code", "code", callback.Query().Get("code"),
		"redirect_uri", kcApp+"/oauth2/callback", "code_verifier", verifier), kcClientID, kcSecret)
	if tok.IDToken == "" {
		t.Fatal("no ID token from the code exchange")
	}
	return tok.IDToken
}

func kcServiceAccount(t *testing.T, s *kcStack) {
	api := newKCClient(t, s)
	token := s.kc.ClientCredentials(t, kcRealm, kcClientID, kcSecret)
	e := api.echo(api.bearer(kcApp+"/api/items", token))
	if got, want := e.Headers.Get("Auth-Subject"), s.kc.ServiceAccountID(t, kcRealm, kcClientID); got != want {
		t.Errorf("Auth-Subject = %q, want the service account %q", got, want)
	}
	if got := e.Headers.Get("Auth-Username"); got != "" {
		t.Errorf("Auth-Username = %q, want none (a service account has no email)", got)
	}
}

func kcManyGroupsUser(t *testing.T, s *kcStack) {
	if err := <-s.manyReady; err != nil {
		t.Fatalf("adding the user in %d groups: %v", kcManyGroups, err)
	}
	t.Logf("the user in %d groups was added (in the background) in %v", kcManyGroups, s.manyTook.Round(time.Millisecond))
	c := newKCClient(t, s)
	start := time.Now()
	f := c.signIn(kcApp+"/many?y=2", "many")
	t.Logf("sign-in with %d groups took %v", kcManyGroups, time.Since(start).Round(time.Millisecond))
	e := c.echo(f.final)
	if e.Path != "/many" || e.Query != "y=2" {
		t.Errorf("came back to %s?%s, want /many?y=2", e.Path, e.Query)
	}
	groups := strings.Split(e.Headers.Get("Auth-Groups"), ",")
	slices.Sort(groups)
	if !slices.Equal(groups, kcGroupNames()) {
		t.Errorf("Auth-Groups has %d groups, want the %d of the user", len(groups), kcManyGroups)
	}
	var size int
	cookies := c.cookies(kcApp)
	for _, k := range cookies {
		size += len(k.Value)
	}
	t.Logf("session: %d cookies, %d bytes", len(cookies), size)
	c.echo(c.get(kcApp + "/last-group/x"))
	if p := c.get(kcApp + "/admin/x"); p.StatusCode != http.StatusForbidden {
		t.Errorf("/admin: status %d, want 403", p.StatusCode)
	}
}

func kcUnverified(t *testing.T, s *kcStack) {
	for _, app := range []string{kcApp, kcClaimsApp} {
		before := s.sum(t, `portcullis_authserver_oidc_failures_total{reason="email_unverified"}`) +
			metric(t, s.claims, `portcullis_authserver_oidc_failures_total{reason="email_unverified"}`)
		f := newKCClient(t, s).signIn(app+"/unverified", "bob")
		if f.callback == nil || f.final.StatusCode != http.StatusForbidden {
			t.Errorf("%s: bob (email not verified): status %d, want 403: %.300s", app, f.final.StatusCode, f.final.body)
		}
		after := s.sum(t, `portcullis_authserver_oidc_failures_total{reason="email_unverified"}`) +
			metric(t, s.claims, `portcullis_authserver_oidc_failures_total{reason="email_unverified"}`)
		if after <= before {
			t.Errorf("%s: email_unverified failures %v -> %v, want more", app, before, after)
		}
	}
}

// kcTwoTabs: one browser starts two sign-ins (two tabs), then finishes
// the older first. Each must land on its own page.
func kcTwoTabs(t *testing.T, s *kcStack) {
	c := newKCClient(t, s)
	var authorize [2]*page
	for i, path := range []string{"/tab/one", "/tab/two"} {
		authorize[i] = c.get(kcApp + path)
		if !isRedirect(authorize[i]) || !c.atKeycloak(authorize[i].location(t)) {
			t.Fatalf("%s: status %d, want a redirect to Keycloak", path, authorize[i].StatusCode)
		}
	}
	// The first signs in at Keycloak; the second then needs no password.
	callbacks := [2]*url.URL{c.login(authorize[0].location(t), "alice"), c.login(authorize[1].location(t), "alice")}
	for i, want := range []string{"/tab/one", "/tab/two"} {
		p := c.follow(callbacks[i])
		if p.StatusCode != http.StatusOK {
			t.Errorf("tab %d: status %d (Location %q), want 200 at %s: %.200s", i+1, p.StatusCode, p.Header.Get("Location"), want, p.body)
			continue
		}
		if e := c.echo(p); e.Path != want {
			t.Errorf("tab %d landed on %s, want %s", i+1, e.Path, want)
		}
	}
}

// kcParallel: separate browsers sign in at the same moment; a slow
// callback must not be sent twice (a replayed one-time state).
func kcParallel(t *testing.T, s *kcStack) {
	for i := range 4 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			c := newKCClient(t, s)
			want := fmt.Sprintf("/parallel/%d", i)
			if e := c.echo(c.signIn(kcApp+want, "alice").final); e.Path != want {
				t.Errorf("landed on %s, want %s", e.Path, want)
			}
		})
	}
}

func kcRefresh(t *testing.T, s *kcStack, alice *kcClient) {
	api := newKCClient(t, s)
	expiring := s.kc.ClientCredentials(t, kcRealm, kcClientID, kcSecret)
	api.echo(api.bearer(kcApp+"/api/items", expiring))
	refreshes := `portcullis_authserver_oidc_events_total{event="refresh"}`
	before := s.sum(t, refreshes)
	time.Sleep(kcTokenTTL + 2*time.Second) // past the session's tokens and the bearer token
	p := alice.get(kcApp + "/after-expiry")
	if e := alice.echo(p); e.Headers.Get("Auth-Username") != "alice@example.test" {
		t.Errorf("Auth-Username = %q after refresh", e.Headers.Get("Auth-Username"))
	}
	if !setsSession(p) {
		t.Errorf("no new session cookie: %v", p.Header.Values("Set-Cookie"))
	}
	// At least this refresh: other subtests sign in meanwhile.
	if after := s.sum(t, refreshes); after < before+1 {
		t.Errorf("refresh events %v -> %v, want +1", before, after)
	}
	if p := alice.get(kcApp + "/after-refresh"); alice.echo(p) != nil && setsSession(p) {
		t.Errorf("the renewed session was refreshed again: %v", p.Header.Values("Set-Cookie"))
	}
	kcWantUnauthorized(t, "expired token", api.bearer(kcApp+"/api/items", expiring))
}

// setsSession reports whether the answer sets a new session cookie.
func setsSession(p *page) bool {
	for _, c := range p.Cookies() {
		if strings.HasPrefix(c.Name, oidcCookie) && c.Value != "" && c.MaxAge > 0 {
			return true
		}
	}
	return false
}

// kcKeyRotation: Keycloak signs with a new key of a higher priority; then
// the old key is removed from the realm (its JWKS).
func kcKeyRotation(t *testing.T, s *kcStack) {
	api := newKCClient(t, s)
	old := s.kc.PasswordToken(t, kcRealm, kcCLI, "alice", kcPassword).AccessToken
	if kid := jwtKid(t, old); kid != s.kid {
		t.Fatalf("token signed with %s, want the imported key %s", kid, s.kid)
	}
	api.echo(api.bearer(kcApp+"/api/items", old))
	// A token with an unknown kid on each replica: the key set was just
	// fetched again when the new key comes.
	for range 2 * len(s.replicas) {
		kcWantUnauthorized(t, "unknown kid", api.bearer(kcApp+"/api/items", withKid(t, old, "no-such-key")))
	}
	_, kid := s.kc.AddRSAKey(t, kcRealm, 300, nil)
	fresh := s.kc.PasswordToken(t, kcRealm, kcCLI, "alice", kcPassword).AccessToken
	if got := jwtKid(t, fresh); got != kid {
		t.Fatalf("new token signed with %s, want the new key %s", got, kid)
	}
	// Every request, on every replica (round robin), from the first:
	// accepted, if need be after a fetch of the key set, never refused.
	start := time.Now()
	for i := range 2 * len(s.replicas) {
		if p := api.bearer(kcApp+"/api/items", fresh); p.StatusCode != http.StatusOK {
			t.Errorf("request %d with a token of the new key: status %d, want 200", i+1, p.StatusCode)
		}
	}
	t.Logf("requests with the new key took %v", time.Since(start).Round(time.Millisecond))
	s.kc.RemoveKey(t, kcRealm, s.keyComponent)
	start = time.Now()
	harness.Eventually(t, kcWithdrawnKeyWithin, func() error {
		for range 2 * len(s.replicas) {
			if p := api.bearer(kcApp+"/api/items", old); p.StatusCode != http.StatusUnauthorized {
				return fmt.Errorf("token of the withdrawn key: status %d", p.StatusCode)
			}
		}
		return nil
	})
	t.Logf("withdrawn key refused after %v", time.Since(start).Round(time.Millisecond))
}

func jwtHeader(t *testing.T, token string) map[string]any {
	t.Helper()
	header := map[string]any{}
	b, _ := base64.RawURLEncoding.DecodeString(strings.Split(token, ".")[0])
	if err := json.Unmarshal(b, &header); err != nil {
		t.Fatalf("JWT header: %v", err)
	}
	return header
}

func jwtKid(t *testing.T, token string) string {
	kid, _ := jwtHeader(t, token)["kid"].(string)
	return kid
}

// withHeader is token with a header field changed (its signature no
// longer matches; sig "" drops it).
func withHeader(t *testing.T, token, field string, value any, sig bool) string {
	parts := strings.Split(token, ".")
	header := jwtHeader(t, token)
	header[field] = value
	b, _ := json.Marshal(header)
	out := base64.RawURLEncoding.EncodeToString(b) + "." + parts[1] + "."
	if sig {
		out += parts[2]
	}
	return out
}

func withKid(t *testing.T, token, kid string) string { return withHeader(t, token, "kid", kid, true) }

func sha256Sum(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}

// urlValues makes url.Values of key, value pairs.
func urlValues(kv ...string) url.Values {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return v
}

func mustURL(t *testing.T, s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// kcBrowser signs in with headless Chromium on Keycloak's real login
// page, and shows the error page to a user whose email is not verified.
func kcBrowser(t *testing.T, s *kcStack) {
	br := harness.StartBrowser(t, harness.BrowserConfig{
		CAPEM: s.ca.CertPEM, // Keycloak's certificate is from the same CA
		HostRules: []string{
			"MAP " + kcHost + ":443 " + s.HTTPSAddr,
			"MAP " + kcClaimsHost + ":443 " + s.HTTPSAddr,
		},
	})
	alice := br.NewSession(t)
	resp := kcBrowserSignIn(t, s, alice, kcApp+"/hello/page?x=1", "alice")
	if resp.Status != http.StatusOK || alice.URL() != kcApp+"/hello/page?x=1" {
		t.Fatalf("after sign-in: status %d at %s, want 200 at %s/hello/page?x=1", resp.Status, alice.URL(), kcApp)
	}
	if e := pageEcho(t, alice); e.Headers.Get("Auth-Username") != "alice@example.test" {
		t.Errorf("Auth-Username = %q", e.Headers.Get("Auth-Username"))
	}
	if c := alice.Cookies(kcApp + "/"); len(c) != 1 || c[0].Name != oidcCookie || !c[0].Secure || !c[0].HTTPOnly {
		t.Errorf("cookies %v, want the session cookie alone, Secure and HttpOnly", cookieNames(c))
	}
	bob := br.NewSession(t)
	resp = kcBrowserSignIn(t, s, bob, kcApp+"/unverified", "bob")
	text := strings.ToLower(bob.Text())
	if resp.Status != http.StatusForbidden || !strings.HasPrefix(resp.MimeType, "text/html") || !strings.Contains(text, "sign in again") {
		t.Errorf("bob (email not verified): status %d %s: %.300q; want 403 and an HTML page offering to sign in again",
			resp.Status, resp.MimeType, text)
	}
}

// kcBrowserSignIn navigates to u and fills in Keycloak's login form as
// username until the browser leaves Keycloak; it returns the last
// response.
func kcBrowserSignIn(t *testing.T, s *kcStack, sess *harness.Session, u, username string) *network.Response {
	t.Helper()
	resp := sess.Navigate(u)
	for range 4 {
		if !strings.HasPrefix(sess.URL(), s.issuer+"/") {
			return resp
		}
		if !sess.Has("#username") {
			t.Fatalf("Keycloak page %s without the login form: %.300s", sess.URL(), sess.Text())
		}
		sess.Do(chromedp.SendKeys(chromedp.CSS("#username"), username),
			chromedp.SendKeys(chromedp.CSS("#password"), kcPassword))
		resp = sess.Click("#kc-login")
	}
	t.Fatalf("sign-in from %s did not leave Keycloak: at %s", u, sess.URL())
	return nil
}

// kcLogout signs alice out: the app's POST, Keycloak's end-session
// endpoint (its confirmation page: no ID token is sent), back on the
// signed-out page, and signed out at Keycloak too.
func kcLogout(t *testing.T, s *kcStack, alice *kcClient) {
	p := alice.post(kcApp+"/oauth2/sign_out", "Origin", kcApp)
	loc := p.location(t)
	if p.StatusCode != http.StatusFound || !strings.HasPrefix(loc.String(), s.issuer+"/protocol/openid-connect/logout?") {
		t.Fatalf("logout: status %d Location %s, want 302 to Keycloak's end-session endpoint", p.StatusCode, loc)
	}
	q := loc.Query()
	if q.Get("client_id") != kcClientID || q.Get("post_logout_redirect_uri") != kcSignedOut {
		t.Errorf("end-session query = %v, want client_id and post_logout_redirect_uri", q)
	}
	if q.Has("id_token_hint") {
		t.Errorf("the ID token is in the logout URL (id_token_hint): Keycloak signs out with client_id")
	}
	for _, c := range alice.cookies(kcApp) {
		if strings.HasPrefix(c.Name, oidcCookie) {
			t.Errorf("cookie %s still in the jar after logout", c.Name)
		}
	}
	back := alice.login(loc, "alice")
	if back.String() != kcSignedOut {
		t.Errorf("Keycloak sent us to %s, want %s", back, kcSignedOut)
	}
	if e := alice.echo(alice.get(back.String())); e.Path != "/public/signed-out" {
		t.Errorf("after logout landed on %s", e.Path)
	}
	p = alice.get(kcApp + "/")
	if !isRedirect(p) || !alice.atKeycloak(p.location(t)) {
		t.Fatalf("after logout: status %d, want a redirect to Keycloak", p.StatusCode)
	}
	if p = alice.get(p.location(t).String()); p.StatusCode != http.StatusOK || !strings.Contains(p.body, `name="username"`) {
		t.Errorf("after logout Keycloak did not ask to sign in again: status %d at %s", p.StatusCode, p.Request.URL)
	}
}
