package e2e

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/apis/projectcontour/v1alpha1"
	"github.com/portcullis/portcullis/e2e/harness"
)

const (
	dexHost      = "app.dex.test"
	dexApp       = "https://" + dexHost
	dexSignedOut = dexApp + "/public/signed-out"
	dexClientID  = "portcullis"
	dexSecret    = "e2e-dex-client-secret"
	dexOther     = "other-service" // a client whose tokens are not for portcullis
	dexOtherPass = "e2e-dex-other-secret"
	dexTokenTTL  = 5 * time.Second // expiry.idTokens: ID and access tokens
	// dexKeysRotation: Dex checks every 30 s whether its key is due, so
	// the first rotation after the start comes at 60 s, in the last case.
	dexKeysRotation = 55 * time.Second
	dexManyGroups   = 1000
)

// dexStack is the stack of the OIDC tests (portcullis serve with the file
// provider, Envoy, the echo upstream, two authserver oidc replicas behind
// one ExtensionService) in front of a real Dex serving HTTPS with a
// certificate of the test's CA.
type dexStack struct {
	*harness.Stack
	dex      *harness.Dex
	ca       *harness.CA
	replicas []string // metrics URLs of the auth servers
}

func startDexStack(t *testing.T) *dexStack {
	ca := harness.NewCA(t, "portcullis-dex-e2e")
	dex := harness.StartDex(t, harness.DexConfig{
		CA: ca, IDTokenTTL: dexTokenTTL, KeysRotation: dexKeysRotation,
		Clients: []harness.DexClient{
			{ID: dexClientID, Secret: dexSecret, RedirectURIs: []string{dexApp + "/oauth2/callback"}},
			{ID: dexOther, Secret: dexOtherPass},
		},
		Users: []harness.DexUser{
			{Username: "alice", Email: "alice@example.test", Groups: []string{"admins", "users"}},
			{Username: "bob", Email: "bob@example.test", Unverified: true, Groups: []string{"users"}},
			{Username: "many", Email: "many@example.test", Groups: dexGroupNames()},
			{Username: "rita", Email: "rita@example.test"}, // signs in once: her refresh token stays hers
		},
	})
	s := &dexStack{dex: dex, ca: ca}
	echo := harness.StartEcho(t, "echo")
	dir := t.TempDir()
	httpAddr, httpsAddr, _ := harness.StartEnvoyAndControlPlane(t, "--provider", "file", "-f", dir)
	s.Stack = &harness.Stack{Objects: harness.Dir(dir), HTTPAddr: httpAddr, HTTPSAddr: httpsAddr}
	authserver := harness.BuildBinary(t, "github.com/portcullis/portcullis/authserver/cmd/authserver")
	conf := s.authConfig(t)
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: harness.AuthNamespace}},
		ca.Issue(t, dexHost).Secret("default", "dex-tls"),
	}
	objs = append(objs, harness.LoopbackEndpointSlice("default", "echo", 80, echo.Port)...)
	for _, name := range []string{"dex-a", "dex-b"} {
		addr, metrics := startOIDCAuthServer(t, authserver, name, conf, dexSecret)
		objs = append(objs, harness.LoopbackEndpointSlice(harness.AuthNamespace, name, 9443, harness.Port(t, addr))...)
		s.replicas = append(s.replicas, metrics)
	}
	objs = append(objs, dexExtensionService(), dexProxy())
	if err := s.Objects.Apply(context.Background(), objs...); err != nil {
		t.Fatal(err)
	}
	return s
}

func dexGroupNames() []string {
	g := make([]string, dexManyGroups)
	for i := range g {
		g[i] = fmt.Sprintf("g-%04d", i)
	}
	return g
}

// authConfig is docs/authserver-oidc.md's Dex example, with the test CA
// for Dex's certificate.
func (s *dexStack) authConfig(t *testing.T) string {
	key := make([]byte, 32)
	rand.Read(key)
	keyFile := filepath.Join(t.TempDir(), "cookie-key")
	writeTestFile(t, keyFile, base64.StdEncoding.EncodeToString(key))
	conf := filepath.Join(t.TempDir(), "oidc.yaml")
	writeTestFile(t, conf, fmt.Sprintf(`issuer: %s
providerCAFile: %s
clientID: %s
clientSecretEnv: OIDC_CLIENT_SECRET
scopes: [openid, email, profile, groups, offline_access]
postLogoutRedirectURL: %s
allowedRedirectHosts: [%s]
cookie:
  keyFile: %s
bearer:
  audiences: [%s]
`, s.dex.Issuer, s.ca.WriteFile(t), dexClientID, dexSignedOut, dexHost, keyFile, dexClientID))
	return conf
}

func dexExtensionService() *v1alpha1.ExtensionService {
	h2c := "h2c"
	return &v1alpha1.ExtensionService{
		ObjectMeta: metav1.ObjectMeta{Namespace: harness.AuthNamespace, Name: "dex-oidc"},
		Spec: v1alpha1.ExtensionServiceSpec{Protocol: &h2c,
			Services:      []v1alpha1.ExtensionServiceTarget{{Name: "dex-a", Port: 9443}, {Name: "dex-b", Port: 9443}},
			TimeoutPolicy: &contourv1.TimeoutPolicy{Response: "5s"}},
	}
}

func dexProxy() *contourv1.HTTPProxy {
	echo := []contourv1.Service{{Name: "echo", Port: 80}}
	ctx := func(k, v string) *contourv1.AuthorizationPolicy {
		return &contourv1.AuthorizationPolicy{Context: map[string]string{k: v}}
	}
	return &contourv1.HTTPProxy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "dex-app"},
		Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{
				Fqdn: dexHost,
				TLS:  &contourv1.TLS{SecretName: "dex-tls"},
				Authorization: &contourv1.AuthorizationServer{
					ExtensionServiceRef: contourv1.ExtensionServiceReference{Namespace: harness.AuthNamespace, Name: "dex-oidc"},
				},
			},
			Routes: []contourv1.Route{
				{Conditions: []contourv1.MatchCondition{{Prefix: "/public"}}, AuthPolicy: &contourv1.AuthorizationPolicy{Disabled: true}, Services: echo},
				{Conditions: []contourv1.MatchCondition{{Prefix: "/admin"}}, AuthPolicy: ctx("oidc.portcullis.dev/groups", "admins"), Services: echo},
				{Conditions: []contourv1.MatchCondition{{Prefix: "/audit"}}, AuthPolicy: ctx("oidc.portcullis.dev/groups", "auditors"), Services: echo},
				{Conditions: []contourv1.MatchCondition{{Prefix: "/api"}}, AuthPolicy: ctx("oidc.portcullis.dev/api", "true"), Services: echo},
				{Services: echo},
			},
		},
	}
}

// browser returns a cookie-keeping client that reaches app.dex.test
// through Envoy's HTTPS listener and Dex directly, trusting the test CA,
// and does not follow redirects.
func (s *dexStack) browser(t *testing.T) *browser {
	jar, _ := cookiejar.New(nil)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(s.ca.CertPEM)
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	return &browser{t: t, issuer: s.dex.Issuer, client: &http.Client{
		Jar:     jar,
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				if host, _, _ := net.SplitHostPort(addr); host == dexHost {
					addr = s.HTTPSAddr
				}
				return dialer.DialContext(ctx, network, addr)
			},
			TLSClientConfig:   &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
			DisableKeepAlives: true,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// dexTab is b (its cookies) in subtest t, so that its failures end t.
func dexTab(b *browser, t *testing.T) *browser {
	c := *b
	c.t = t
	return &c
}

// startSignIn asks for u without a session and returns Dex's
// authorization URL the app redirected to.
func (s *dexStack) startSignIn(b *browser, u string) string {
	b.t.Helper()
	p := b.get(u)
	loc := p.location(b.t).String()
	if p.StatusCode != http.StatusFound || !strings.HasPrefix(loc, s.dex.Issuer+"/auth?") {
		b.t.Fatalf("GET %s: status %d Location %q, want 302 to Dex", u, p.StatusCode, loc)
	}
	return loc
}

// finishSignIn signs user in at Dex from authorizeURL, sends the callback
// to the app and follows its redirect: the app's answer at the original URL.
func (s *dexStack) finishSignIn(b *browser, authorizeURL, user string) *page {
	b.t.Helper()
	callback := s.dex.Login(b.t, b.client, authorizeURL, user)
	if callback.Host != dexHost || callback.Path != "/oauth2/callback" {
		b.t.Fatalf("Dex sent the browser to %s, want the app's callback", callback)
	}
	p := b.get(callback.String())
	if p.StatusCode != http.StatusFound {
		return p
	}
	return b.get(p.location(b.t).String())
}

func (s *dexStack) signIn(b *browser, u, user string) *page {
	b.t.Helper()
	return s.finishSignIn(b, s.startSignIn(b, u), user)
}

// sum adds one series over the auth servers.
func (s *dexStack) sum(t *testing.T, series string) float64 {
	var n float64
	for _, u := range s.replicas {
		n += metric(t, u, series)
	}
	return n
}

// dexSubject is Dex's sub claim for a user of its password database:
// the protobuf {1: user ID, 2: connector ID}, base64url.
func dexSubject(userID string) string {
	b := append([]byte{0x0a, byte(len(userID))}, userID...)
	b = append(b, 0x12, byte(len("local")))
	b = append(b, "local"...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// TestDex runs the OIDC cases Dex can express against a real Dex
// (v2.45.1, hack/tools/dex): its login form, its tokens, its keys.
func TestDex(t *testing.T) {
	s := startDexStack(t)
	harness.Eventually(t, 30*time.Second, func() error {
		p, err := s.browser(t).try(harness.MustRequest(t, dexApp+"/"))
		if err != nil {
			return err
		}
		if p.StatusCode != http.StatusFound || !strings.HasPrefix(p.Header.Get("Location"), s.dex.Issuer+"/auth?") {
			return fmt.Errorf("GET /: status %d Location %q", p.StatusCode, p.Header.Get("Location"))
		}
		return nil
	})
	firstKid := s.dex.KeyIDs(t)[0]
	alice := s.browser(t)
	t.Run("sign-in through Dex's login form returns to the original URL with claims as headers", func(t *testing.T) {
		alice := dexTab(alice, t)
		e := alice.echo(s.signIn(alice, dexApp+"/hello/page?x=1", "alice@example.test"))
		if e.Path != "/hello/page" || e.Query != "x=1" {
			t.Errorf("came back to %s?%s, want /hello/page?x=1", e.Path, e.Query)
		}
		if err := harness.WantHeaders(e.Headers, map[string]string{"Auth-Username": "alice@example.test",
			"Auth-Subject": dexSubject("user-0-alice"), "Auth-Groups": "admins,users"}); err != nil {
			t.Error(err)
		}
		alice.echo(alice.get(dexApp + "/admin/x"))
		if p := alice.get(dexApp + "/audit/x"); p.StatusCode != http.StatusForbidden {
			t.Errorf("/audit (group auditors): status %d, want 403", p.StatusCode)
		}
	})
	if t.Failed() {
		t.FailNow()
	}
	t.Run("an unverified email is refused", func(t *testing.T) { testDexUnverified(t, s) })
	t.Run("a user in 1,000 groups signs in", func(t *testing.T) { testDexManyGroups(t, s) })
	t.Run("two sign-ins at once in one browser both land", func(t *testing.T) { testDexTwoSignIns(t, s) })
	var bearer string
	t.Run("bearer tokens", func(t *testing.T) { bearer = testDexBearer(t, s) })
	rita := s.browser(t)
	t.Run("an expired session is refreshed with Dex's refresh token, an expired bearer token refused",
		func(t *testing.T) { testDexRefresh(t, s, rita, bearer) })
	t.Run("a later sign-in of the same user ends the earlier session's refresh", func(t *testing.T) {
		testDexRefreshReplaced(t, s, alice)
	})
	t.Run("logout is local: Dex has no end-session endpoint", func(t *testing.T) { testDexLogout(t, s, rita) })
	t.Run("tokens signed with Dex's next key pass at once", func(t *testing.T) { testDexKeyRotation(t, s, firstKid) })
}

func testDexUnverified(t *testing.T, s *dexStack) {
	series := `portcullis_authserver_oidc_failures_total{reason="email_unverified"}`
	before := s.sum(t, series)
	bob := s.browser(t)
	if p := s.signIn(bob, dexApp+"/bob", "bob@example.test"); p.StatusCode != http.StatusForbidden {
		t.Errorf("bob (emailVerified: false): status %d, want 403: %.300s", p.StatusCode, p.body)
	}
	if after := s.sum(t, series); after <= before {
		t.Errorf("email_unverified failures %v -> %v, want more", before, after)
	}
}

func testDexManyGroups(t *testing.T, s *dexStack) {
	many := s.browser(t)
	e := many.echo(s.signIn(many, dexApp+"/many", "many@example.test"))
	if g := e.Headers.Get("Auth-Groups"); !strings.HasPrefix(g, "g-0000,") || !strings.HasSuffix(g, ",g-0999") {
		t.Errorf("Auth-Groups = %.40q...%q", g, g[max(0, len(g)-20):])
	}
	many.echo(many.get(dexApp + "/many/again"))
}

// testDexTwoSignIns: two tabs of one browser start a sign-in each before
// either finishes; the older finishes first.
func testDexTwoSignIns(t *testing.T, s *dexStack) {
	b := s.browser(t)
	first := s.startSignIn(b, dexApp+"/tab/one")
	second := s.startSignIn(b, dexApp+"/tab/two")
	for _, tab := range []struct{ authorize, path string }{{first, "/tab/one"}, {second, "/tab/two"}} {
		p := s.finishSignIn(b, tab.authorize, "alice@example.test")
		if p.StatusCode != http.StatusOK {
			t.Errorf("tab %s: status %d, want 200: %.300s", tab.path, p.StatusCode, p.body)
			continue
		}
		if e := b.echo(p); e.Path != tab.path {
			t.Errorf("tab %s landed on %s", tab.path, e.Path)
		}
	}
}

// testDexBearer: Dex's access tokens are JWTs with aud = the client ID,
// shaped like its ID tokens (at_hash included), with the nonce of the
// sign-in that issued them.
// It returns a valid access token, which the refresh case checks again
// once expired.
func testDexBearer(t *testing.T, s *dexStack) string {
	api := s.browser(t)
	pw := s.dex.PasswordToken(t, dexClientID, dexSecret, "alice@example.test")
	for name, token := range map[string]string{"access token": pw.AccessToken, "ID token": pw.IDToken} {
		// Without a nonce (the password grant) Dex's ID token cannot be told
		// from its access token: both pass (docs/authserver-oidc.md, Dex).
		e := api.echo(api.get(dexApp+"/api/items", "Authorization", "Bearer "+token))
		if e.Headers.Get("Auth-Subject") != dexSubject("user-0-alice") || e.Headers.Get("Auth-Username") != "alice@example.test" {
			t.Errorf("password grant %s: Auth-Subject %q Auth-Username %q", name, e.Headers.Get("Auth-Subject"), e.Headers.Get("Auth-Username"))
		}
	}
	testDexBearerRefused(t, s, api, pw.AccessToken)
	return pw.AccessToken
}

// testDexBearerRefused: each gets 401 with a Bearer challenge, never a
// sign-in redirect.
func testDexBearerRefused(t *testing.T, s *dexStack, api *browser, valid string) {
	call := func(token string) *page { return api.get(dexApp+"/api/items", "Authorization", "Bearer "+token) }
	code := s.codeFlowTokens(t)
	other := s.dex.PasswordToken(t, dexOther, dexOtherPass, "alice@example.test")
	foreign := harness.StartDex(t, harness.DexConfig{CA: s.ca, Path: "/foreign",
		Clients: []harness.DexClient{{ID: dexClientID, Secret: dexSecret}},
		Users:   []harness.DexUser{{Username: "alice", Email: "alice@example.test"}}})
	refused := map[string]string{
		"code flow access token (has the sign-in's nonce)": code.AccessToken,
		"code flow ID token":                          code.IDToken,
		"another client's (aud other-service)":        other.AccessToken,
		"another Dex's (foreign issuer, its own key)": foreign.PasswordToken(t, dexClientID, dexSecret, "alice@example.test").AccessToken,
		"alg none": algNone(t, valid),
		"garbage":  "not.a.jwt",
	}
	notAccess := `portcullis_authserver_oidc_failures_total{reason="bearer_not_access_token"}`
	before := s.sum(t, notAccess)
	for name, token := range refused {
		p := call(token)
		if p.StatusCode != http.StatusUnauthorized || p.Header.Get("Location") != "" ||
			!strings.HasPrefix(p.Header.Get("WWW-Authenticate"), "Bearer ") {
			t.Errorf("%s: status %d, Location %q, WWW-Authenticate %q; want 401 with a Bearer challenge",
				name, p.StatusCode, p.Header.Get("Location"), p.Header.Get("WWW-Authenticate"))
		}
	}
	if after := s.sum(t, notAccess); after != before+2 {
		t.Errorf("bearer_not_access_token failures %v -> %v, want +2 (the code flow's tokens)", before, after)
	}
	if p := api.get(dexApp + "/api/items"); p.StatusCode != http.StatusUnauthorized || p.Header.Get("Location") != "" {
		t.Errorf("API route without a token: status %d, Location %q", p.StatusCode, p.Header.Get("Location"))
	}
}

// codeFlowTokens signs alice in with the authorization code flow as
// portcullis, with a nonce, and exchanges the code itself: the tokens a
// web application holds.
func (s *dexStack) codeFlowTokens(t *testing.T) *harness.DexTokens {
	q := url.Values{"client_id": {dexClientID}, "response_type": {"code"}, "scope": {"openid email profile groups"},
		"redirect_uri": {dexApp + "/oauth2/callback"}, "state": {"state-of-the-test"}, "nonce": {"nonce-of-the-test"}}
	callback := s.dex.Login(t, s.browser(t).client, s.dex.Issuer+"/auth?"+q.Encode(), "alice@example.test")
	return s.dex.Token(t, dexClientID, dexSecret, url.Values{"grant_type": {"authorization_code"},
		"code": {callback.Query().Get("code")}, "redirect_uri": {dexApp + "/oauth2/callback"}})
}

// dexKid is the kid of a JWS's header.
func dexKid(t *testing.T, token string) string {
	h, _, _ := strings.Cut(token, ".")
	b, err := base64.RawURLEncoding.DecodeString(h)
	var header struct {
		Kid string `json:"kid"`
	}
	if err != nil || json.Unmarshal(b, &header) != nil {
		t.Fatalf("not a JWS: %.20q", token)
	}
	return header.Kid
}

// testDexRefresh signs rita in and waits past her tokens' expiry; expired
// is an access token issued before.
func testDexRefresh(t *testing.T, s *dexStack, rita *browser, expired string) {
	rita = dexTab(rita, t)
	rita.echo(s.signIn(rita, dexApp+"/rita", "rita@example.test"))
	time.Sleep(dexTokenTTL + 2*time.Second)
	series := `portcullis_authserver_oidc_events_total{event="refresh"}`
	before := s.sum(t, series)
	p := rita.get(dexApp + "/after-expiry")
	if e := rita.echo(p); e.Headers.Get("Auth-Username") != "rita@example.test" {
		t.Errorf("Auth-Username = %q after refresh", e.Headers.Get("Auth-Username"))
	}
	var renewed bool
	for _, c := range p.Cookies() {
		renewed = renewed || (c.Name == oidcCookie && c.Value != "")
	}
	if !renewed {
		t.Errorf("no new session cookie on the allowed response: %v", p.Header.Values("Set-Cookie"))
	}
	if after := s.sum(t, series); after != before+1 {
		t.Errorf("refresh events %v -> %v, want +1", before, after)
	}
	rita.echo(rita.get(dexApp + "/after-refresh"))
	if after := s.sum(t, series); after != before+1 {
		t.Errorf("refresh events %v -> %v after a second request, want no new refresh", before, after)
	}
	if expired == "" {
		return
	}
	p = rita.get(dexApp+"/api/items", "Authorization", "Bearer "+expired)
	if p.StatusCode != http.StatusUnauthorized || p.Header.Get("Location") != "" {
		t.Errorf("expired bearer token: status %d, Location %q, want 401", p.StatusCode, p.Header.Get("Location"))
	}
}

// testDexRefreshReplaced: Dex keeps one refresh token per user and
// client, and deletes it when the user signs in through the client again:
// alice's first session (its tokens expired during the refresh case) can
// no longer refresh once she signs in on a second device, and a failed
// refresh is a new sign-in.
func testDexRefreshReplaced(t *testing.T, s *dexStack, alice *browser) {
	alice = dexTab(alice, t)
	second := s.browser(t)
	second.echo(s.signIn(second, dexApp+"/second-device", "alice@example.test"))
	series := `portcullis_authserver_oidc_failures_total{reason="refresh"}`
	before := s.sum(t, series)
	p := alice.get(dexApp + "/first-session")
	if loc := p.Header.Get("Location"); p.StatusCode != http.StatusFound || !strings.HasPrefix(loc, s.dex.Issuer+"/auth?") {
		t.Errorf("status %d Location %q, want 302 to Dex", p.StatusCode, loc)
	}
	if after := s.sum(t, series); after != before+1 {
		t.Errorf("refresh failures %v -> %v, want +1", before, after)
	}
}

func testDexLogout(t *testing.T, s *dexStack, rita *browser) {
	rita = dexTab(rita, t)
	if ep, ok := s.dex.Discovery(t)["end_session_endpoint"]; ok {
		t.Errorf("Dex now publishes end_session_endpoint %v: test RP-initiated logout", ep)
	}
	p := rita.post(dexApp+"/oauth2/sign_out", "Origin", dexApp)
	if loc := p.location(t); p.StatusCode != http.StatusFound || loc.String() != dexSignedOut {
		t.Fatalf("logout: status %d Location %s, want 302 to postLogoutRedirectURL", p.StatusCode, loc)
	}
	for _, c := range rita.cookiesOf(dexApp) {
		if strings.HasPrefix(c.Name, oidcCookie) {
			t.Errorf("cookie %s still in the jar after logout", c.Name)
		}
	}
	rita.echo(rita.get(dexSignedOut))
	// Dex 2.45 keeps no browser session: the next visit asks for the
	// password again.
	p = rita.get(s.startSignIn(rita, dexApp+"/again"))
	for p.StatusCode >= 300 && p.StatusCode < 400 {
		p = rita.get(p.location(t).String())
	}
	if !strings.Contains(p.body, `name="password"`) {
		t.Errorf("after logout Dex did not show its login form: %s %d", p.Request.URL, p.StatusCode)
	}
}

func testDexKeyRotation(t *testing.T, s *dexStack, firstKid string) {
	harness.Eventually(t, 2*dexKeysRotation, func() error {
		if kids := s.dex.KeyIDs(t); kids[0] == firstKid {
			return fmt.Errorf("Dex still signs with %s", firstKid)
		}
		return nil
	})
	tok := s.dex.PasswordToken(t, dexClientID, dexSecret, "alice@example.test")
	if kid := dexKid(t, tok.AccessToken); kid == firstKid {
		t.Fatalf("the token after the rotation is signed with the first key %s", kid)
	}
	api := s.browser(t)
	api.echo(api.get(dexApp+"/api/items", "Authorization", "Bearer "+tok.AccessToken))
	// A browser signs in with an ID token of the new key too.
	b := s.browser(t)
	b.echo(s.signIn(b, dexApp+"/after-rotation", "alice@example.test"))
}
