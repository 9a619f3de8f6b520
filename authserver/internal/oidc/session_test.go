package oidc

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// standInOP is the part of an OpenID Provider the callback, refresh and
// bearer checks talk to: discovery, JWKS and a token endpoint that
// answers any code or refresh token with an ID token for claims. The e2e
// tests run the same flows against a real provider.
type standInOP struct {
	*httptest.Server
	key    *rsa.PrivateKey
	claims map[string]any // of the ID tokens it issues
	nonce  string         // the ID token's nonce
	ttl    int            // expires_in of the tokens, seconds
}

func newStandInOP(t *testing.T, claims map[string]any) *standInOP {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	op := &standInOP{key: k, claims: claims, nonce: "the-nonce", ttl: 60}
	op.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		// Write errors are discarded: a failed answer is the client's error.
		switch r.URL.Path {
		case "/.well-known/openid-configuration":
			fmt.Fprintf(w, `{"issuer":%q,"authorization_endpoint":"%[1]s/auth","token_endpoint":"%[1]s/token","jwks_uri":"%[1]s/jwks","end_session_endpoint":"%[1]s/session/end"}`, op.URL)
		case "/jwks":
			_ = json.NewEncoder(w).Encode(map[string]any{"keys": []map[string]string{{
				"kty": "RSA", "kid": "k", "alg": "RS256", "use": "sig",
				"n": base64.RawURLEncoding.EncodeToString(k.N.Bytes()),
				"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(k.E)).Bytes()),
			}}})
		case "/token":
			_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "at", "token_type": "Bearer", "expires_in": op.ttl,
				"refresh_token": "rt-" + randomString(), "id_token": op.idToken(t, "portcullis")})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(op.Close)
	return op
}

// idToken signs op.claims for audience aud with the usual registered
// claims and the nonce: the shape of an ID token.
func (op *standInOP) idToken(t testing.TB, aud string) string {
	claims := maps.Clone(op.claims)
	claims["nonce"] = op.nonce
	return op.sign(t, map[string]string{"typ": "JWT"}, claims, aud)
}

// accessToken signs op.claims for audience aud as a JWT access token
// (RFC 9068: typ at+jwt, no nonce).
func (op *standInOP) accessToken(t testing.TB, aud string) string {
	return op.sign(t, map[string]string{"typ": "at+jwt"}, maps.Clone(op.claims), aud)
}

// sign signs claims with the registered claims added and header's
// fields beside alg and kid.
func (op *standInOP) sign(t testing.TB, header map[string]string, claims map[string]any, aud string) string {
	claims["iss"], claims["aud"] = op.URL, aud
	claims["iat"], claims["exp"] = time.Now().Unix(), time.Now().Add(time.Minute).Unix()
	enc := base64.RawURLEncoding
	header = maps.Clone(header)
	header["alg"], header["kid"] = "RS256", "k"
	h, _ := json.Marshal(header)
	p, _ := json.Marshal(claims)
	input := enc.EncodeToString(h) + "." + enc.EncodeToString(p)
	sum := sha256.Sum256([]byte(input))
	sig, err := rsa.SignPKCS1v15(rand.Reader, op.key, crypto.SHA256, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	return input + "." + enc.EncodeToString(sig)
}

// newServerFor is a backend for op; edit changes its configuration first.
// The log goes to logs.
func newServerFor(t *testing.T, op *standInOP, logs *bytes.Buffer, edit func(*Config)) *Server {
	t.Helper()
	c := Config{Issuer: op.URL, ClientID: "portcullis", Bearer: BearerConfig{Audiences: []string{"api"}}}
	if edit != nil {
		edit(&c)
	}
	c.setDefaults()
	srv, err := New(&Settings{Config: c, ClientSecret: "s", Keys: [][]byte{key(1)}}, slog.New(slog.NewTextHandler(logs, nil)), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

func manyGroups(n int) []any {
	g := make([]any, n)
	for i := range g {
		g[i] = fmt.Sprintf("team-with-a-rather-long-name-%04d", i)
	}
	return g
}

// callback completes a sign-in as the provider's redirect would: with a
// state cookie of ours and the provider's code.
func callback(t *testing.T, srv *Server, op *standInOP) *authv3.CheckResponse {
	t.Helper()
	fs, _ := json.Marshal(flowState{State: "st", Nonce: op.nonce, Verifier: "v", Return: "/orig?x=1", Expiry: time.Now().Add(time.Minute).Unix()})
	resp, err := srv.Check(context.Background(), checkReq("GET", "/oauth2/callback?code=c&state=st", map[string]string{"cookie": flowCookieFor(srv, "st", fs)}, nil))
	if err != nil {
		t.Fatalf("callback: %v", err)
	}
	return resp
}

// flowCookieFor is the Cookie header entry of the sign-in state for
// state holding the sealed flowState JSON plain.
func flowCookieFor(srv *Server, state string, plain []byte) string {
	name := srv.flowCookie(state)
	return name + "=" + srv.sealer.seal(name, plain)
}

// setCookies parses the Set-Cookie headers of a denial (a redirect) or of
// an allowed response.
func setCookies(t *testing.T, resp *authv3.CheckResponse) []*http.Cookie {
	t.Helper()
	var out []*http.Cookie
	values := deniedHeader(resp, "Set-Cookie")
	for _, h := range resp.GetOkResponse().GetResponseHeadersToAdd() {
		values = append(values, h.GetHeader().GetValue())
	}
	for _, v := range values {
		c, err := http.ParseSetCookie(v)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

// sessionOf reassembles and opens the session cookie a response sets,
// returning its plaintext and the Cookie header a browser would send.
func sessionOf(t *testing.T, srv *Server, resp *authv3.CheckResponse) ([]byte, string) {
	t.Helper()
	jar := map[string]string{}
	var header []string
	for _, c := range setCookies(t, resp) {
		if c.MaxAge > 0 && !srv.isFlowCookie(c.Name) {
			jar[c.Name] = c.Value
			header = append(header, c.Name+"="+c.Value)
		}
	}
	value, ok := readChunked(jar, srv.s.Cookie.Name)
	if !ok {
		t.Fatalf("no session cookie set: %v", setCookies(t, resp))
	}
	plain, err := srv.sealer.open(srv.s.Cookie.Name, value)
	if err != nil {
		t.Fatal(err)
	}
	return plain, strings.Join(header, "; ")
}

// allowedHeaders checks with cookie and returns the upstream headers.
func allowedHeaders(t *testing.T, srv *Server, cookie string) map[string]string {
	t.Helper()
	resp, err := srv.Check(context.Background(), checkReq("GET", "/x", map[string]string{"cookie": cookie}, nil))
	if err != nil || resp.GetOkResponse() == nil {
		t.Fatalf("check with the session: %v, %v", resp, err)
	}
	got := map[string]string{}
	for _, h := range resp.GetOkResponse().GetHeaders() {
		got[h.GetHeader().GetKey()] = h.GetHeader().GetValue()
	}
	return got
}

// TestSessionHoldsTheClaimsOnce: the session used to hold the ID token's
// claims twice (decoded, and inside the raw ID token), about 2.3 times
// their size, so users in a few hundred groups could not sign in.
func TestSessionHoldsTheClaimsOnce(t *testing.T) {
	claims := map[string]any{"sub": "big", "email": "big@example.test", "groups": manyGroups(200)}
	op := newStandInOP(t, claims)
	srv := newServerFor(t, op, &bytes.Buffer{}, nil)
	resp := callback(t, srv, op)
	if loc := deniedHeader(resp, "Location"); len(loc) != 1 || loc[0] != "/orig?x=1" {
		t.Fatalf("callback: %v", resp)
	}
	plain, cookie := sessionOf(t, srv, resp)
	claimsJSON, _ := json.Marshal(claims)
	// The raw ID token alone is base64 (4/3) of the claims plus a header
	// and an RS256 signature.
	if limit := len(claimsJSON)*4/3 + 700; len(plain) > limit {
		t.Errorf("session plaintext is %d bytes for %d bytes of claims, want at most %d (the claims once)", len(plain), len(claimsJSON), limit)
	}
	var sess session
	if err := json.Unmarshal(plain, &sess); err != nil || sess.IDToken == "" || sess.Claims != nil {
		t.Errorf("session holds claims %v and ID token %t, want the raw ID token alone (%v)", sess.Claims != nil, sess.IDToken != "", err)
	}
	got := allowedHeaders(t, srv, cookie)
	if got["Auth-Subject"] != "big" || !strings.HasSuffix(got["Auth-Groups"], "team-with-a-rather-long-name-0199") {
		t.Errorf("headers from the session: Auth-Subject %q Auth-Groups %.60q...", got["Auth-Subject"], got["Auth-Groups"])
	}
	// Logout still has the ID token for id_token_hint, when asked to send it.
	srv.s.LogoutIDTokenHint = true
	out, err := srv.Check(context.Background(), checkReq("POST", "/oauth2/sign_out", map[string]string{"cookie": cookie, "origin": "https://app.example.com"}, nil))
	if err != nil {
		t.Fatal(err)
	}
	if loc := deniedHeader(out, "Location"); len(loc) != 1 || !strings.Contains(loc[0], "id_token_hint="+url.QueryEscape(sess.IDToken)) {
		t.Errorf("logout Location %.120q..., want the ID token as id_token_hint", loc)
	}
}

// TestLogoutKeepsTheIDTokenOutOfTheURL: the end-session redirect is a URL
// (browser history, the provider's access log, Referer); the raw ID token
// used to travel in it as id_token_hint. By default logout names the
// client instead; logoutIDTokenHint: true sends the hint for providers
// that need it.
func TestLogoutKeepsTheIDTokenOutOfTheURL(t *testing.T) {
	op := newStandInOP(t, map[string]any{"sub": "u", "email": "u@example.test"})
	for _, tc := range []struct {
		name string
		hint bool
		want map[string]string // query parameters; "" means absent
	}{
		{"default", false, map[string]string{"client_id": "portcullis", "post_logout_redirect_uri": "https://app.example.com/bye", "id_token_hint": ""}},
		{"logoutIDTokenHint", true, map[string]string{"client_id": "portcullis", "post_logout_redirect_uri": "https://app.example.com/bye", "id_token_hint": "set"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServerFor(t, op, &bytes.Buffer{}, func(c *Config) {
				c.PostLogoutRedirectURL, c.LogoutIDTokenHint = "https://app.example.com/bye", tc.hint
			})
			_, cookie := sessionOf(t, srv, callback(t, srv, op))
			out, err := srv.Check(context.Background(), checkReq("POST", "/oauth2/sign_out", map[string]string{"cookie": cookie, "origin": "https://app.example.com"}, nil))
			if err != nil {
				t.Fatal(err)
			}
			loc := deniedHeader(out, "Location")
			if len(loc) != 1 || !strings.HasPrefix(loc[0], op.URL+"/session/end?") {
				t.Fatalf("Location %q, want the end-session endpoint", loc)
			}
			u, _ := url.Parse(loc[0])
			for k, want := range tc.want {
				got := u.Query().Get(k)
				if (want == "set" && got == "") || (want != "set" && got != want) {
					t.Errorf("%s = %.40q, want %q", k, got, want)
				}
			}
		})
	}
}

// TestBearerRefusesNonAccessTokens: a bearer credential must be an access
// token. ID tokens were accepted (their aud is the client ID, which
// bearer.audiences names for Keycloak), and they travel where access
// tokens do not (URLs, the browser). The rule: the JOSE typ, when set, is
// JWT or at+jwt; a typ claim, when set, is Bearer (Keycloak: ID, Refresh,
// Logout otherwise); without a typ claim, a nonce marks an ID token.
func TestBearerRefusesNonAccessTokens(t *testing.T) {
	op := newStandInOP(t, map[string]any{"sub": "client"})
	srv := newServerFor(t, op, &bytes.Buffer{}, func(c *Config) { c.Bearer.Audiences = []string{"portcullis"} })
	claims := func(extra map[string]any) map[string]any {
		c := maps.Clone(op.claims)
		maps.Copy(c, extra)
		return c
	}
	for _, tc := range []struct {
		name    string
		header  map[string]string
		claims  map[string]any
		allowed bool
	}{
		{"RFC 9068 access token", map[string]string{"typ": "at+jwt"}, claims(nil), true},
		{"access token, typ application/at+jwt", map[string]string{"typ": "application/at+jwt"}, claims(nil), true},
		{"access token, typ JWT", map[string]string{"typ": "JWT"}, claims(nil), true},
		{"access token, no typ", map[string]string{}, claims(nil), true},
		{"Keycloak access token", map[string]string{"typ": "JWT"}, claims(map[string]any{"typ": "Bearer"}), true},
		{"Keycloak < 24 access token with a nonce", map[string]string{"typ": "JWT"}, claims(map[string]any{"typ": "Bearer", "nonce": "n"}), true},
		{"ID token (nonce)", map[string]string{"typ": "JWT"}, claims(map[string]any{"nonce": "n", "at_hash": "h"}), false},
		{"Keycloak ID token", map[string]string{"typ": "JWT"}, claims(map[string]any{"typ": "ID", "azp": "portcullis"}), false},
		{"Keycloak ID token without a nonce", map[string]string{"typ": "JWT"}, claims(map[string]any{"typ": "ID"}), false},
		{"Keycloak refresh token", map[string]string{"typ": "JWT"}, claims(map[string]any{"typ": "Refresh"}), false},
		{"Keycloak logout token", map[string]string{"typ": "JWT"}, claims(map[string]any{"typ": "Logout"}), false},
		{"typ claim not a string", map[string]string{"typ": "JWT"}, claims(map[string]any{"typ": 1}), false},
		{"logout token (JOSE typ)", map[string]string{"typ": "logout+jwt"}, claims(nil), false},
		{"security event (JOSE typ)", map[string]string{"typ": "secevent+jwt"}, claims(nil), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			token := op.sign(t, tc.header, tc.claims, "portcullis")
			before := testutil.ToFloat64(srv.m.failures.WithLabelValues(failJWTNotAccess))
			resp, err := srv.Check(context.Background(), checkReq("GET", "/api", map[string]string{"authorization": "Bearer " + token}, nil))
			if err != nil {
				t.Fatal(err)
			}
			if got := resp.GetOkResponse() != nil; got != tc.allowed {
				t.Fatalf("allowed = %t, want %t", got, tc.allowed)
			}
			if tc.allowed {
				return
			}
			if c := deniedHeader(resp, "WWW-Authenticate"); resp.GetDeniedResponse().GetStatus().GetCode() != 401 || len(c) != 1 || !strings.Contains(c[0], "invalid_token") {
				t.Errorf("status %v WWW-Authenticate %q, want 401 invalid_token", resp.GetDeniedResponse().GetStatus(), c)
			}
			if after := testutil.ToFloat64(srv.m.failures.WithLabelValues(failJWTNotAccess)); after != before+1 {
				t.Errorf("%s failures %v -> %v", failJWTNotAccess, before, after)
			}
		})
	}
}

// TestSessionTooLarge: a session that needs more than maxChunks cookies
// gets a page that says so, clears the state cookie, is counted and
// logged with its size, never its content. It used to be an error: the
// generic 500 "authorization failed", state cookie left, no reason.
func TestSessionTooLarge(t *testing.T) {
	op := newStandInOP(t, map[string]any{"sub": "huge", "email": "huge@example.test", "groups": manyGroups(1000)})
	var logs bytes.Buffer
	srv := newServerFor(t, op, &logs, nil)
	resp := callback(t, srv, op)
	d := resp.GetDeniedResponse()
	if d.GetStatus().GetCode() != http.StatusInternalServerError || !strings.Contains(d.GetBody(), "too large") ||
		strings.Contains(d.GetBody(), "authorization failed") {
		t.Fatalf("callback answered %d %q, want 500 with a page that says the session is too large", d.GetStatus().GetCode(), d.GetBody())
	}
	if ct := deniedHeader(resp, "Content-Type"); len(ct) != 1 || !strings.HasPrefix(ct[0], "text/html") {
		t.Errorf("Content-Type %v, want an HTML page", ct)
	}
	var cleared bool
	for _, c := range setCookies(t, resp) {
		if c.Name == srv.flowCookie("st") && c.MaxAge < 0 {
			cleared = true
		} else {
			t.Errorf("Set-Cookie %s (Max-Age %d): only the state cookie should be cleared", c.Name, c.MaxAge)
		}
	}
	if !cleared {
		t.Error("state cookie not cleared")
	}
	if got := testutil.ToFloat64(srv.m.failures.WithLabelValues(failSessionTooLarge)); got != 1 {
		t.Errorf("session_too_large failures = %v, want 1", got)
	}
	log := logs.String()
	if !strings.Contains(log, "sessionBytes=") || !strings.Contains(log, "largestClaims=\"groups=") {
		t.Errorf("log lacks the sizes: %s", log)
	}
	if strings.Contains(log, "team-with") || strings.Contains(log, "huge@example.test") {
		t.Errorf("log holds claim values: %s", log)
	}
}

// TestSessionClaimFilter: with session.claims the session keeps only the
// claims asked for (and sub), so a user in many groups signs in; the raw
// ID token is not kept (it carries every claim), so logout sends no
// id_token_hint.
func TestSessionClaimFilter(t *testing.T) {
	claims := map[string]any{"sub": "huge", "email": "huge@example.test", "name": "Huge", "groups": manyGroups(1000)}
	for _, tc := range []struct {
		name   string
		filter ClaimFilter
		want   []string
	}{
		{"keep", ClaimFilter{Keep: []string{"email", "name"}}, []string{"email", "name", "sub"}},
		{"drop", ClaimFilter{Drop: []string{"groups"}}, []string{"aud", "email", "exp", "iat", "iss", "name", "nonce", "sub"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			op := newStandInOP(t, claims)
			var logs bytes.Buffer
			srv := newServerFor(t, op, &logs, func(c *Config) { c.Session.Claims = tc.filter })
			if !strings.Contains(logs.String(), "session.claims drops a claim a header reads") || !strings.Contains(logs.String(), "header=Auth-Groups") {
				t.Errorf("no start-up warning for Auth-Groups, whose claim is dropped: %s", logs.String())
			}
			resp := callback(t, srv, op)
			if deniedHeader(resp, "Location") == nil {
				t.Fatalf("callback: %v", resp)
			}
			plain, cookie := sessionOf(t, srv, resp)
			var sess session
			if err := json.Unmarshal(plain, &sess); err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(sortedKeys(sess.Claims), ","); got != strings.Join(tc.want, ",") || sess.IDToken != "" {
				t.Errorf("session claims %s, ID token %t; want %v and no ID token", got, sess.IDToken != "", tc.want)
			}
			got := allowedHeaders(t, srv, cookie)
			if got["Auth-Username"] != "huge@example.test" || got["Auth-Groups"] != "" {
				t.Errorf("headers %v", got)
			}
			out, err := srv.Check(context.Background(), checkReq("POST", "/oauth2/sign_out", map[string]string{"cookie": cookie, "origin": "https://app.example.com"}, nil))
			if err != nil {
				t.Fatal(err)
			}
			if loc := deniedHeader(out, "Location"); len(loc) != 1 || strings.Contains(loc[0], "id_token_hint") || !strings.Contains(loc[0], "client_id=portcullis") {
				t.Errorf("logout Location %q, want client_id and no id_token_hint", loc)
			}
		})
	}
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// TestRefreshKeepsTheClaimsOnce: a refreshed session is stored as a new
// one is (raw ID token alone, or the filtered claims), and a refresh
// that no longer fits is counted like a sign-in that does not.
func TestRefreshKeepsTheClaimsOnce(t *testing.T) {
	for _, tc := range []struct {
		name      string
		filter    ClaimFilter
		groups    int
		wantToken bool // the raw ID token, not claims
		tooLarge  bool
	}{
		{"unfiltered", ClaimFilter{}, 100, true, false},
		{"filtered", ClaimFilter{Keep: []string{"email"}}, 1000, false, false},
		{"grown too large", ClaimFilter{}, 1000, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			op := newStandInOP(t, map[string]any{"sub": "u", "email": "u@example.test", "groups": manyGroups(3)})
			srv := newServerFor(t, op, &bytes.Buffer{}, func(c *Config) { c.Session.Claims = tc.filter })
			_, cookie := sessionOf(t, srv, callback(t, srv, op))
			op.claims["groups"], op.ttl = manyGroups(tc.groups), 600
			srv.now = func() time.Time { return time.Now().Add(2 * time.Minute) } // the tokens expired
			resp, err := srv.Check(context.Background(), checkReq("GET", "/x", map[string]string{"cookie": cookie}, nil))
			if err != nil {
				t.Fatal(err)
			}
			if tc.tooLarge {
				if resp.GetOkResponse() != nil || testutil.ToFloat64(srv.m.failures.WithLabelValues(failSessionTooLarge)) != 1 {
					t.Errorf("a refresh too large for cookies: allowed %t, session_too_large %v; want a new sign-in and 1",
						resp.GetOkResponse() != nil, testutil.ToFloat64(srv.m.failures.WithLabelValues(failSessionTooLarge)))
				}
				return
			}
			if resp.GetOkResponse() == nil {
				t.Fatalf("refresh: %v", resp)
			}
			plain, _ := sessionOf(t, srv, resp)
			var sess session
			if err := json.Unmarshal(plain, &sess); err != nil {
				t.Fatalf("refreshed session: %v", err)
			}
			if (sess.IDToken != "") != tc.wantToken || (sess.Claims != nil) == tc.wantToken {
				t.Errorf("refreshed session: ID token %t, claims %t; want the ID token %t", sess.IDToken != "", sess.Claims != nil, tc.wantToken)
			}
		})
	}
}

// TestBearerStripAuthorization: the bearer token reaches the upstream
// unless bearer.stripAuthorization is set.
func TestBearerStripAuthorization(t *testing.T) {
	op := newStandInOP(t, map[string]any{"sub": "client"})
	for _, strip := range []bool{false, true} {
		srv := newServerFor(t, op, &bytes.Buffer{}, func(c *Config) { c.Bearer.StripAuthorization = strip })
		token := op.accessToken(t, "api")
		resp, err := srv.Check(context.Background(), checkReq("GET", "/api", map[string]string{"authorization": "Bearer " + token}, nil))
		if err != nil || resp.GetOkResponse() == nil {
			t.Fatalf("stripAuthorization %t: %v, %v", strip, resp, err)
		}
		removed := false
		for _, h := range resp.GetOkResponse().GetHeadersToRemove() {
			removed = removed || strings.EqualFold(h, "authorization")
		}
		if removed != strip {
			t.Errorf("stripAuthorization %t: Authorization removed = %t (headers_to_remove %v)", strip, removed, resp.GetOkResponse().GetHeadersToRemove())
		}
	}
}

// A provider that says the address is not verified (email_verified:
// false) gets no Auth-Username from it: the request is refused, unless
// allowUnverifiedEmail. A provider that does not send the claim is
// trusted.
//
// Only an address that is there and used can be refused: Keycloak's
// service-account (client credentials) tokens say email_verified: false
// and carry no email, and were refused.
func TestUnverifiedEmailRefused(t *testing.T) {
	noEmailHeader := []HeaderMapping{{"Auth-Subject", "sub"}}
	for _, tc := range []struct {
		name    string
		claims  map[string]any
		allow   bool
		headers []HeaderMapping   // default: the default headers (Auth-Username from email)
		context map[string]string // the route's rules
		want    bool              // allowed
	}{
		{"verified", map[string]any{"sub": "u", "email": "a@example.com", "email_verified": true}, false, nil, nil, true},
		{"no email_verified claim", map[string]any{"sub": "u", "email": "a@example.com"}, false, nil, nil, true},
		{"unverified", map[string]any{"sub": "u", "email": "victim@example.com", "email_verified": false}, false, nil, nil, false},
		{"unverified, allowed by the operator", map[string]any{"sub": "u", "email": "a@example.com", "email_verified": false}, true, nil, nil, true},
		{"service account: unverified, no email", map[string]any{"sub": "sa", "email_verified": false}, false, nil, nil, true},
		{"service account: unverified, empty email", map[string]any{"sub": "sa", "email": "", "email_verified": false}, false, nil, nil, true},
		{"unverified, email in no header", map[string]any{"sub": "u", "email": "a@example.com", "email_verified": false}, false, noEmailHeader, nil, true},
		{"unverified, email read by the route's rule", map[string]any{"sub": "u", "email": "victim@example.com", "email_verified": false}, false, noEmailHeader,
			map[string]string{KeyClaimPrefix + "email": "victim@example.com"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			op := newStandInOP(t, tc.claims)
			srv := newServerFor(t, op, &bytes.Buffer{}, func(c *Config) { c.AllowUnverifiedEmail, c.Headers = tc.allow, tc.headers })
			resp, err := srv.Check(context.Background(), checkReq("GET", "/api", map[string]string{"authorization": "Bearer " + op.accessToken(t, "api")}, tc.context))
			if err != nil {
				t.Fatal(err)
			}
			if got := resp.GetOkResponse() != nil; got != tc.want {
				t.Fatalf("allowed = %t, want %t: %v", got, tc.want, resp)
			}
			if !tc.want && resp.GetDeniedResponse().GetStatus().GetCode() != 403 {
				t.Errorf("denied with %v, want 403", resp.GetDeniedResponse().GetStatus())
			}
		})
	}
}

// TestClaimFilterKeepsEmailVerified: the Keycloak example's
// `keep: [sub, email, name, groups]` dropped email_verified, so an
// address the provider had not verified became Auth-Username. Keeping
// email keeps email_verified.
func TestClaimFilterKeepsEmailVerified(t *testing.T) {
	for _, tc := range []struct {
		name     string
		filter   ClaimFilter
		verified bool
		allowed  bool
	}{
		{"keep email, unverified", ClaimFilter{Keep: []string{"sub", "email", "name", "groups"}}, false, false},
		{"keep email, verified", ClaimFilter{Keep: []string{"sub", "email", "name", "groups"}}, true, true},
		{"drop others, unverified", ClaimFilter{Drop: []string{"groups"}}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			op := newStandInOP(t, map[string]any{"sub": "u", "email": "victim@example.test", "email_verified": tc.verified, "name": "U"})
			srv := newServerFor(t, op, &bytes.Buffer{}, func(c *Config) { c.Session.Claims = tc.filter })
			plain, cookie := sessionOf(t, srv, callback(t, srv, op))
			var sess session
			if err := json.Unmarshal(plain, &sess); err != nil {
				t.Fatal(err)
			}
			if v, ok := sess.Claims["email_verified"]; !ok || v != tc.verified {
				t.Errorf("session claims %v: email_verified not kept", sortedKeys(sess.Claims))
			}
			resp, err := srv.Check(context.Background(), checkReq("GET", "/x", map[string]string{"cookie": cookie}, nil))
			if err != nil {
				t.Fatal(err)
			}
			if got := resp.GetOkResponse() != nil; got != tc.allowed {
				t.Errorf("allowed = %t, want %t (status %v)", got, tc.allowed, resp.GetDeniedResponse().GetStatus())
			}
		})
	}
}
