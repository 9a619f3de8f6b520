package oidc

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadConfigDefaultsAndSecrets(t *testing.T) {
	keyFile := writeFile(t, "key", base64.StdEncoding.EncodeToString(key(7))+"\n")
	t.Setenv("TEST_OIDC_SECRET", "s3cret")
	t.Setenv("TEST_OIDC_OLD_KEY", hex.EncodeToString(key(8)))
	path := writeFile(t, "oidc.yaml", `
issuer: https://login.example.com/
clientID: portcullis
clientSecretEnv: TEST_OIDC_SECRET
scopes: [email, groups]
cookie:
  keyFile: `+keyFile+`
  previousKeyEnv: TEST_OIDC_OLD_KEY
  sessionLifetime: 90m
`)
	s, err := LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if s.Issuer != "https://login.example.com/" || s.ClientSecret != "s3cret" { // as written: see TestIssuerKeptExactly
		t.Errorf("issuer %q secret %q", s.Issuer, s.ClientSecret)
	}
	if strings.Join(s.Scopes, " ") != "openid email groups" {
		t.Errorf("scopes = %v, want openid added", s.Scopes)
	}
	if s.CallbackPath != "/oauth2/callback" || s.LoginPath != "/oauth2/sign_in" || s.LogoutPath != "/oauth2/sign_out" ||
		s.Cookie.Name != "__Host-portcullis_session" || s.Cookie.Path != "/" || s.Cookie.SessionLifetime.Duration != 90*time.Minute {
		t.Errorf("defaults: %+v", s.Config)
	}
	if len(s.Keys) != 2 || s.Keys[0][0] != 7 || s.Keys[1][0] != 8 {
		t.Errorf("keys = %v, want current then previous", s.Keys)
	}
	if len(s.Headers) != 3 || s.Headers[1] != (HeaderMapping{"Auth-Username", "email"}) {
		t.Errorf("default headers = %v", s.Headers)
	}
	if strings.Join(s.Bearer.Algorithms, ",") != "RS256,ES256" {
		t.Errorf("default algorithms = %v", s.Bearer.Algorithms)
	}
}

func TestLoadConfigPublicClient(t *testing.T) {
	t.Setenv("TEST_OIDC_KEY", base64.RawURLEncoding.EncodeToString(key(1)))
	s, err := Config{Issuer: "https://login.example.com", ClientID: "spa", Cookie: CookieConfig{KeyEnv: "TEST_OIDC_KEY"}}.Load()
	if err != nil || s.ClientSecret != "" {
		t.Fatalf("public client: %v, secret %q", err, s.ClientSecret)
	}
}

func TestLoadConfigErrors(t *testing.T) {
	keyFile := writeFile(t, "key", base64.StdEncoding.EncodeToString(key(1)))
	shortKey := writeFile(t, "short", base64.StdEncoding.EncodeToString([]byte("too short")))
	empty := writeFile(t, "empty", "\n")
	t.Setenv("TEST_OIDC_EMPTY", "")
	good := "issuer: https://login.example.com\nclientID: c\ncookie:\n  keyFile: " + keyFile + "\n"
	for _, tc := range []struct{ name, yaml, want string }{
		{"unknown field", good + "clientSecret: inline\n", "unknown field"},
		{"no issuer", "clientID: c\ncookie: {keyFile: " + keyFile + "}\n", "issuer"},
		{"issuer not a URL", strings.Replace(good, "https://login.example.com", "login.example.com", 1), "issuer"},
		{"no client id", strings.Replace(good, "clientID: c\n", "", 1), "clientID"},
		{"no cookie key", "issuer: https://x.example\nclientID: c\n", "cookie.key"},
		{"short cookie key", strings.Replace(good, keyFile, shortKey, 1), "32 bytes"},
		{"missing key file", strings.Replace(good, keyFile, "/nonexistent/key", 1), "no such file"},
		{"empty secret file", good + "clientSecretFile: " + empty + "\n", "empty"},
		{"unset secret env", good + "clientSecretEnv: TEST_OIDC_EMPTY\n", "TEST_OIDC_EMPTY"},
		{"file and env", good + "clientSecretFile: " + keyFile + "\nclientSecretEnv: X\n", "not both"},
		{"relative callback", good + "callbackPath: oauth2/callback\n", "callbackPath"},
		{"same paths", good + "loginPath: /oauth2/callback\n", "must differ"},
		{"bad redirect host", good + "allowedRedirectHosts: [\"evil.example/x\"]\n", "allowedRedirectHosts"},
		{"redirect URL on another path", good + "redirectURL: https://app.example.com/callback\n", "redirectURL"},
		{"relative redirect URL", good + "redirectURL: /oauth2/callback\n", "redirectURL"},
		{"bad post-logout URL", good + "postLogoutRedirectURL: /relative\n", "postLogoutRedirectURL"},
		{"bad cookie name", good + "  name: \"a;b\"\n", "cookie.name"},
		{"bad lifetime", good + "  sessionLifetime: forever\n", "duration"},
		{"negative lifetime", good + "  sessionLifetime: -1h\n", "sessionLifetime"},
		{"bad header name", good + "headers: [{name: \"Auth User\", claim: email}]\n", "headers"},
		{"HMAC algorithm", good + "bearer: {audiences: [a], algorithms: [HS256]}\n", "HS256"},
		{"none algorithm", good + "bearer: {audiences: [a], algorithms: [none]}\n", "none"},
		{"plain http issuer", strings.Replace(good, "https://", "http://", 1), "allowInsecureIssuer"},
		{"plain http loopback issuer", strings.Replace(good, "https://login.example.com", "http://127.0.0.1:5556", 1), "plain http"},
		{"keep and drop", good + "session: {claims: {keep: [email], drop: [groups]}}\n", "not both"},
		{"drop sub", good + "session: {claims: {drop: [groups, sub]}}\n", "sub"},
		{"empty claim name", good + "session: {claims: {keep: [\"\"]}}\n", "session.claims"},
		{"unknown session field", good + "session: {claims: {only: [email]}}\n", "unknown field"},
		{"JWKS refresh too often", good + "jwksRefreshInterval: 10ms\n", "jwksRefreshInterval"},
		{"drop email_verified, keep email", good + "session: {claims: {drop: [groups, email_verified]}}\n", "email_verified"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadConfig(writeFile(t, "oidc.yaml", tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want one mentioning %q", err, tc.want)
			}
		})
	}
	if _, err := LoadConfig("/nonexistent/oidc.yaml"); err == nil {
		t.Error("missing file accepted")
	}
}

// TestInsecureIssuerNeedsTheFlag: an http:// issuer loads only with
// allowInsecureIssuer; the flag changes nothing for https.
func TestInsecureIssuerNeedsTheFlag(t *testing.T) {
	keyFile := writeFile(t, "key", base64.StdEncoding.EncodeToString(key(1)))
	for _, issuer := range []string{"http://127.0.0.1:5556", "https://login.example.com"} {
		s, err := LoadConfig(writeFile(t, "oidc.yaml", "issuer: "+issuer+"\nallowInsecureIssuer: true\nclientID: c\ncookie: {keyFile: "+keyFile+"}\n"))
		if err != nil || s.Issuer != issuer {
			t.Errorf("%s with allowInsecureIssuer: %v", issuer, err)
		}
	}
}

// TestSessionClaimsConfig: keep or drop lists load as written.
func TestSessionClaimsConfig(t *testing.T) {
	keyFile := writeFile(t, "key", base64.StdEncoding.EncodeToString(key(1)))
	s, err := LoadConfig(writeFile(t, "oidc.yaml", "issuer: https://login.example.com\nclientID: c\ncookie: {keyFile: "+keyFile+"}\nsession:\n  claims:\n    keep: [email, groups]\n"))
	if err != nil {
		t.Fatal(err)
	}
	f := s.Session.Claims
	if !f.active() || !f.keeps("sub") || !f.keeps("groups") || f.keeps("realm_access") {
		t.Errorf("keep [email, groups]: %+v", f)
	}
}

// The example configuration stays valid.
func TestExampleConfigLoads(t *testing.T) {
	t.Setenv("OIDC_CLIENT_SECRET", "example-secret")
	t.Setenv("OIDC_COOKIE_KEY", base64.StdEncoding.EncodeToString(key(3)))
	s, err := LoadConfig("../../../examples/oidc/oidc.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if s.RedirectURL != "https://echo.example.com:18443/oauth2/callback" || len(s.Bearer.Audiences) != 1 {
		t.Errorf("example config: %+v", s.Config)
	}
}

// TestIssuerKeptExactly: OpenID Discovery requires the issuer in the
// provider's metadata to be identical to the configured one, and some
// providers' issuers end in "/" (Auth0: https://tenant.auth0.com/). The
// configured issuer must be used as written, or discovery always fails.
func TestIssuerKeptExactly(t *testing.T) {
	var issuer string
	p := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/.well-known/openid-configuration" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"issuer":%q,"authorization_endpoint":"%[1]sauth","token_endpoint":"%[1]stoken","jwks_uri":"%[1]sjwks"}`, issuer)
	}))
	defer p.Close()
	issuer = p.URL + "/"
	c := Config{Issuer: issuer, ClientID: "portcullis"}
	c.setDefaults()
	if c.Issuer != issuer {
		t.Errorf("issuer %q became %q", issuer, c.Issuer)
	}
	d := &discovery{s: &Settings{Config: c}, client: p.Client()}
	if _, err := d.get(context.Background()); err != nil {
		t.Errorf("discovery of an issuer ending in /: %v", err)
	}
}

// TestCookieNameDefault: without a Domain and on "/", the default name
// carries the __Host- prefix (browsers then refuse the cookie from any
// other host); a name given in the configuration is kept as written, and
// a __Host- name where the prefix cannot hold is a configuration error.
func TestCookieNameDefault(t *testing.T) {
	keyFile := writeFile(t, "key", base64.StdEncoding.EncodeToString(key(1)))
	good := "issuer: https://login.example.com\nclientID: c\ncookie:\n  keyFile: " + keyFile + "\n"
	for _, tc := range []struct{ name, cookie, want, err string }{
		{"no domain, path /", "", "__Host-portcullis_session", ""},
		{"explicit path /", "  path: /\n", "__Host-portcullis_session", ""},
		{"a domain: no __Host- prefix possible", "  domain: example.com\n", "portcullis_session", ""},
		{"another path: no __Host- prefix possible", "  path: /app\n", "portcullis_session", ""},
		{"explicit name kept", "  name: portcullis_session\n", "portcullis_session", ""},
		{"explicit name with a domain", "  name: sso\n  domain: example.com\n", "sso", ""},
		{"explicit __Host- name", "  name: __Host-app\n", "__Host-app", ""},
		{"explicit __Secure- name with a domain", "  name: __Secure-app\n  domain: example.com\n", "__Secure-app", ""},
		{"__Host- name with a domain", "  name: __Host-app\n  domain: example.com\n", "", "__Host-"},
		{"__host- name (any case) on another path", "  name: __host-app\n  path: /app\n", "", "__Host-"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := LoadConfig(writeFile(t, "oidc.yaml", good+tc.cookie))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error = %v, want one mentioning %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Cookie.Name != tc.want {
				t.Errorf("cookie name = %q, want %q", s.Cookie.Name, tc.want)
			}
		})
	}
}
