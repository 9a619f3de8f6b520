package e2e

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
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
	oidcHost = "app.oidc.test"
	oidcApp  = "https://" + oidcHost
	// oidcClaimsHost is served by an auth server whose sessions keep no
	// groups (session.claims) and that strips bearer tokens.
	oidcClaimsHost = "claims.oidc.test"
	oidcClaimsApp  = "https://" + oidcClaimsHost
	oidcTokenTTL   = 4 * time.Second
	oidcCookie     = "__Host-portcullis_session" // the default: no cookie.domain in the configuration
	oidcSignedOut  = oidcApp + "/public/signed-out"
	oidcClientID   = "portcullis"
	oidcClientPass = "e2e-client-secret"
)

// oidcStack is Envoy + control plane (file provider) in front of the echo
// upstream, two authserver oidc replicas sharing a cookie key, and the
// real OpenID Provider; plus a third auth server, with a session claim
// filter, for a second virtual host.
type oidcStack struct {
	*harness.Stack
	ca       *harness.CA
	op       *harness.OIDCProvider
	replicas [2]string // metrics URLs of replica a and b
	claims   string    // metrics URL of the claim-filtering auth server
	objects  []client.Object
}

// oidcHugeGroups is enough groups of oidcGroupName's length that the
// session (the raw ID token, sealed) needs more than the 8 cookies of
// 3800 bytes the auth server writes.
const oidcHugeGroups = 1000

// tooLarge sums session_too_large over every auth server of the stack.
func (s *oidcStack) tooLarge(t *testing.T) float64 {
	var sum float64
	for _, u := range append(s.replicas[:], s.claims) {
		sum += metric(t, u, `portcullis_authserver_oidc_failures_total{reason="session_too_large"}`)
	}
	return sum
}

// startOIDCStack starts the stack with the control plane reading objects
// from files (kubernetes false) or from a real API server.
func startOIDCStack(t *testing.T, sharedJWK string, kubernetes bool) *oidcStack {
	op := harness.StartOIDCProvider(t, harness.OIDCProviderConfig{
		ClientID: oidcClientID, ClientSecret: oidcClientPass, SigningJWK: sharedJWK,
		RedirectURIs:   []string{oidcApp + "/oauth2/callback", oidcClaimsApp + "/oauth2/callback"},
		PostLogoutURIs: []string{oidcSignedOut},
		TokenTTL:       oidcTokenTTL,
		Groups: map[string][]string{"alice": {"users", "admins"}, "big": manyGroups(150),
			"huge": manyGroups(oidcHugeGroups)},
	})
	echo := harness.StartEcho(t, "echo")
	ca := harness.NewCA(t, "portcullis-oidc-e2e")
	dir := t.TempDir()
	key := make([]byte, 32)
	rand.Read(key)
	keyFile := filepath.Join(t.TempDir(), "cookie-key")
	writeTestFile(t, keyFile, base64.StdEncoding.EncodeToString(key))
	config := filepath.Join(t.TempDir(), "oidc.yaml")
	// The test provider serves http on loopback: allowed only by the
	// development flag (an http issuer is refused otherwise).
	base := fmt.Sprintf(`issuer: %s
allowInsecureIssuer: true
clientID: %s
clientSecretEnv: OIDC_CLIENT_SECRET
scopes: [openid, email, profile, groups]
allowedRedirectHosts: [%s]
postLogoutRedirectURL: %s
cookie:
  keyFile: %s
bearer:
  audiences: [%s]
`, op.Issuer, oidcClientID, oidcHost, oidcSignedOut, keyFile, op.APIAudience)
	writeTestFile(t, config, base)
	claimsConfig := filepath.Join(t.TempDir(), "oidc-claims.yaml")
	writeTestFile(t, claimsConfig, strings.Replace(base, "allowedRedirectHosts: ["+oidcHost+"]", "allowedRedirectHosts: ["+oidcClaimsHost+"]", 1)+
		"  stripAuthorization: true\nsession:\n  claims:\n    drop: [groups]\n")

	authserver := harness.BuildBinary(t, "github.com/portcullis/portcullis/authserver/cmd/authserver")
	s := &oidcStack{ca: ca, op: op}
	var addrs [3]string
	for i, name := range []string{"oidc-a", "oidc-b", "oidc-claims"} {
		addrs[i] = fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))
		metrics := fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))
		conf := config
		if name == "oidc-claims" {
			conf = claimsConfig
		}
		p := harness.NewProcess(t, "authserver-"+name, authserver, "oidc", "--config", conf,
			"--address", addrs[i], "--metrics-address", metrics)
		p.Env = []string{"OIDC_CLIENT_SECRET=" + oidcClientPass}
		p.Start()
		if i < 2 {
			s.replicas[i] = "http://" + metrics + "/metrics"
		} else {
			s.claims = "http://" + metrics + "/metrics"
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, a := range addrs {
		if err := harness.WaitTCP(ctx, a); err != nil {
			t.Fatalf("authserver oidc at %s: %v", a, err)
		}
	}

	loopback := harness.LoopbackEndpointSlice
	if kubernetes {
		api := harness.StartAPIServer(t, harness.CRDDir(t))
		s.Stack = harness.StartOnAPIServer(t, api)
		loopback = harness.LoopbackExternalName
	} else {
		httpAddr, httpsAddr, _ := harness.StartEnvoyAndControlPlane(t, "--provider", "file", "-f", dir)
		s.Stack = &harness.Stack{Objects: harness.Dir(dir), HTTPAddr: httpAddr, HTTPSAddr: httpsAddr}
	}
	s.objects = []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: harness.AuthNamespace}},
		ca.Issue(t, oidcHost).Secret("default", "oidc-tls"),
		ca.Issue(t, oidcClaimsHost).Secret("default", "oidc-claims-tls"),
	}
	s.objects = append(s.objects, loopback("default", "echo", 80, echo.Port)...)
	s.objects = append(s.objects, loopback(harness.AuthNamespace, "oidc-a", 9443, harness.Port(t, addrs[0]))...)
	s.objects = append(s.objects, loopback(harness.AuthNamespace, "oidc-b", 9443, harness.Port(t, addrs[1]))...)
	s.objects = append(s.objects, loopback(harness.AuthNamespace, "oidc-claims", 9443, harness.Port(t, addrs[2]))...)
	claimsExt := oidcExtensionService("oidc-claims")
	claimsExt.Name = "oidc-claims"
	s.objects = append(s.objects, oidcExtensionService("oidc-a"), oidcProxy(), claimsExt, oidcClaimsProxy())
	if err := s.Objects.Apply(context.Background(), s.objects...); err != nil {
		t.Fatal(err)
	}
	return s
}

// startOIDCAuthServer starts `authserver oidc --config conf` on free
// loopback ports with the client secret in OIDC_CLIENT_SECRET, waits until
// it listens, and returns its gRPC address and its metrics URL.
func startOIDCAuthServer(t *testing.T, bin, name, conf, secret string) (addr, metrics string) {
	addr, metricsAddr := harness.FreeAddr(t), harness.FreeAddr(t)
	p := harness.NewProcess(t, "authserver-"+name, bin, "oidc", "--config", conf,
		"--address", addr, "--metrics-address", metricsAddr)
	p.Env = []string{"OIDC_CLIENT_SECRET=" + secret}
	p.Start()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := harness.WaitTCP(ctx, addr); err != nil {
		t.Fatalf("authserver %s at %s: %v", name, addr, err)
	}
	return addr, "http://" + metricsAddr + "/metrics"
}

func oidcExtensionService(target string) *v1alpha1.ExtensionService {
	h2c := "h2c"
	return &v1alpha1.ExtensionService{ObjectMeta: metav1.ObjectMeta{Namespace: harness.AuthNamespace, Name: "oidc"},
		Spec: v1alpha1.ExtensionServiceSpec{Protocol: &h2c, Services: []v1alpha1.ExtensionServiceTarget{{Name: target, Port: 9443}}}}
}

func oidcProxy() *contourv1.HTTPProxy {
	echo := []contourv1.Service{{Name: "echo", Port: 80}}
	ctx := func(kv ...string) *contourv1.AuthorizationPolicy {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return &contourv1.AuthorizationPolicy{Context: m}
	}
	return &contourv1.HTTPProxy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "oidc-app"},
		Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{
				Fqdn: oidcHost,
				TLS:  &contourv1.TLS{SecretName: "oidc-tls"},
				Authorization: &contourv1.AuthorizationServer{
					ExtensionServiceRef: contourv1.ExtensionServiceReference{Namespace: harness.AuthNamespace, Name: "oidc"},
					ResponseTimeout:     "10s",
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

// oidcClaimsProxy is claims.oidc.test behind the claim-filtering auth
// server: every path signed in.
func oidcClaimsProxy() *contourv1.HTTPProxy {
	return &contourv1.HTTPProxy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "oidc-claims-app"},
		Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{
				Fqdn: oidcClaimsHost,
				TLS:  &contourv1.TLS{SecretName: "oidc-claims-tls"},
				Authorization: &contourv1.AuthorizationServer{
					ExtensionServiceRef: contourv1.ExtensionServiceReference{Namespace: harness.AuthNamespace, Name: "oidc-claims"},
					ResponseTimeout:     "10s",
				},
			},
			Routes: []contourv1.Route{{Services: []contourv1.Service{{Name: "echo", Port: 80}}}},
		},
	}
}

func manyGroups(n int) []string {
	g := make([]string, n)
	for i := range g {
		g[i] = fmt.Sprintf("team-with-a-rather-long-name-%03d", i)
	}
	return g
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// browser is an HTTP client with a cookie jar that reaches the app
// through Envoy's HTTPS listener and the provider directly, and follows
// redirects and the provider's forms step by step.
type browser struct {
	t      *testing.T
	client *http.Client
	issuer string // the provider's
	// beforeCallback, when set, runs just before the browser follows the
	// provider's redirect to the app's callback.
	beforeCallback func()
}

func newBrowser(t *testing.T, s *oidcStack) *browser {
	jar, _ := cookiejar.New(nil)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(s.ca.CertPEM)
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	return &browser{t: t, issuer: s.op.Issuer, client: &http.Client{
		Jar:     jar,
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				if host, _, _ := net.SplitHostPort(addr); strings.HasSuffix(host, ".oidc.test") {
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

// page is one response with its body read.
type page struct {
	*http.Response
	body string
}

func (b *browser) do(req *http.Request) *page {
	b.t.Helper()
	p, err := b.try(req)
	if err != nil {
		b.t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	return p
}

func (b *browser) try(req *http.Request) (*page, error) {
	resp, err := b.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return &page{Response: resp, body: string(body)}, nil
}

func (b *browser) get(u string, header ...string) *page {
	b.t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		b.t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return b.do(req)
}

// post sends an empty form POST with the given header (name "" for none).
func (b *browser) post(u, name, value string) *page {
	b.t.Helper()
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(""))
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if name != "" {
		req.Header.Set(name, value)
	}
	return b.do(req)
}

// location resolves the response's Location against its request URL.
func (p *page) location(t *testing.T) *url.URL {
	t.Helper()
	loc, err := p.Request.URL.Parse(p.Header.Get("Location"))
	if err != nil || p.Header.Get("Location") == "" {
		t.Fatalf("%s: status %d, no usable Location (%v): %s", p.Request.URL, p.StatusCode, err, p.body)
	}
	return loc
}

// flow records the steps of a sign-in.
type flow struct {
	authorize *url.URL     // the provider URL the app redirected to
	callback  *url.URL     // the app URL the provider redirected back to
	state     *http.Cookie // the state cookie the app set
	final     *page        // the first app response after the callback (or the callback's answer)
}

// signIn starts at u and follows redirects, submitting the provider's
// login form as login and its consent form, until the app answers
// something other than a redirect to the provider. rewriteAuthorize, when
// set, may change the authorization request (an attacker's tampering).
func (b *browser) signIn(u, login string, rewriteAuthorize func(*url.URL)) *flow {
	b.t.Helper()
	f := &flow{}
	p := b.get(u)
	for step := 0; step < 20; step++ {
		switch {
		case p.StatusCode >= 300 && p.StatusCode < 400:
			for _, c := range p.Cookies() {
				if strings.HasPrefix(c.Name, oidcCookie+"_state_") && c.MaxAge > 0 { // one per sign-in
					f.state = &http.Cookie{Name: c.Name, Value: c.Value}
				}
			}
			next := p.location(b.t)
			if f.authorize == nil && strings.HasPrefix(next.String(), b.issuer) && next.Path == "/auth" {
				if rewriteAuthorize != nil {
					rewriteAuthorize(next)
				}
				f.authorize = next
			}
			if strings.HasSuffix(next.Host, ".oidc.test") {
				if next.Path == "/oauth2/callback" {
					f.callback = next
					if b.beforeCallback != nil {
						b.beforeCallback()
					}
				} else if f.callback != nil {
					f.final = b.get(next.String())
					return f
				}
			}
			p = b.get(next.String())
		case p.StatusCode == http.StatusOK && strings.HasPrefix(p.Request.URL.String(), b.issuer):
			p = b.submitForm(p, map[string]string{"login": login, "password": "any"})
		default:
			f.final = p
			return f
		}
	}
	b.t.Fatalf("sign-in from %s did not finish in 20 steps", u)
	return nil
}

// submitForm posts the page's first form (harness.SubmitForm).
func (b *browser) submitForm(p *page, fill map[string]string) *page {
	b.t.Helper()
	resp, body, err := harness.SubmitForm(b.client, p.Request.URL, p.body, fill)
	if err != nil {
		b.t.Fatal(err)
	}
	return &page{Response: resp, body: body}
}

// appCookies returns the app's cookies in the jar.
func (b *browser) appCookies() []*http.Cookie { return b.cookiesOf(oidcApp) }

// cookiesOf returns the jar's cookies for app (an https://host URL).
func (b *browser) cookiesOf(app string) []*http.Cookie {
	u, _ := url.Parse(app + "/")
	return b.client.Jar.Cookies(u)
}

func (b *browser) echo(p *page) *harness.EchoRequest {
	b.t.Helper()
	if p.StatusCode != http.StatusOK {
		b.t.Fatalf("%s: status %d, want 200: %s", p.Request.URL, p.StatusCode, p.body)
	}
	e, err := harness.DecodeEcho([]byte(p.body))
	if err != nil {
		b.t.Fatalf("%s: not from the upstream: %v: %s", p.Request.URL, err, p.body)
	}
	return e
}

// metric reads one sample (full series text, e.g.
// `portcullis_authserver_oidc_events_total{event="refresh"}`) from url.
func metric(t *testing.T, url, series string) float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			var f float64
			if _, err := fmt.Sscan(v, &f); err != nil {
				t.Fatalf("%s: value %q: %v", series, v, err)
			}
			return f
		}
	}
	return 0
}

func TestOIDCFileProvider(t *testing.T)       { runOIDCScenario(t, false) }
func TestOIDCKubernetesProvider(t *testing.T) { runOIDCScenario(t, true) }

// runOIDCScenario is the OIDC scenario against the real provider, the same
// whichever provider feeds the control plane.
func runOIDCScenario(t *testing.T, kubernetes bool) {
	// The provider's signing key, shared with a second ("foreign")
	// provider: its tokens are refused for their issuer alone.
	sharedJWK := harness.NewSigningJWK(t)
	s := startOIDCStack(t, sharedJWK, kubernetes)

	// The configuration reaches Envoy: an unauthenticated browser is sent
	// to the provider.
	harness.Eventually(t, 30*time.Second, func() error {
		p, err := newBrowser(t, s).try(harness.MustRequest(t, oidcApp+"/"))
		if err != nil {
			return err
		}
		if p.StatusCode != http.StatusFound || !strings.HasPrefix(p.Header.Get("Location"), s.op.Issuer+"/auth?") {
			return fmt.Errorf("GET /: status %d Location %q: %s", p.StatusCode, p.Header.Get("Location"), p.body)
		}
		return nil
	})

	alice := newBrowser(t, s)
	var aliceFlow *flow
	var stateCookie *http.Cookie

	t.Run("sign-in through the provider's login form returns to the original URL with identity headers", func(t *testing.T) {
		first := alice.get(oidcApp + "/hello/page?x=1")
		if first.StatusCode != http.StatusFound {
			t.Fatalf("status %d, want 302", first.StatusCode)
		}
		q := first.location(t).Query()
		for _, k := range []string{"state", "nonce", "code_challenge", "redirect_uri"} {
			if q.Get(k) == "" {
				t.Errorf("authorization request lacks %s: %s", k, first.Header.Get("Location"))
			}
		}
		if q.Get("code_challenge_method") != "S256" || q.Get("redirect_uri") != oidcApp+"/oauth2/callback" {
			t.Errorf("authorization request = %v", q)
		}
		for _, c := range first.Cookies() {
			if strings.HasPrefix(c.Name, oidcCookie+"_state_") {
				stateCookie = c
			}
		}
		if stateCookie == nil || !stateCookie.HttpOnly || !stateCookie.Secure || stateCookie.SameSite != http.SameSiteLaxMode || stateCookie.MaxAge <= 0 {
			t.Fatalf("state cookie = %+v, want HttpOnly, Secure, SameSite=Lax, short-lived", stateCookie)
		}
		// What browsers require of a __Host- cookie, or they drop it.
		if stateCookie.Path != "/" || stateCookie.Domain != "" {
			t.Errorf("state cookie Path %q Domain %q, want / and none (__Host- prefix)", stateCookie.Path, stateCookie.Domain)
		}

		aliceFlow = alice.signIn(oidcApp+"/hello/page?x=1", "alice", nil)
		if aliceFlow.callback == nil {
			t.Fatalf("never came back to the callback; last page %d: %s", aliceFlow.final.StatusCode, aliceFlow.final.body)
		}
		e := alice.echo(aliceFlow.final)
		if e.Path != "/hello/page" || e.Query != "x=1" {
			t.Errorf("came back to %s?%s, want /hello/page?x=1", e.Path, e.Query)
		}
		if err := harness.WantHeaders(e.Headers, map[string]string{"Auth-Username": "alice@example.test", "Auth-Subject": "alice", "Auth-Groups": "users,admins"}); err != nil {
			t.Error(err)
		}
		var session *http.Cookie
		for _, c := range alice.appCookies() {
			if c.Name == oidcCookie {
				session = c
			}
		}
		if session == nil {
			t.Fatalf("no session cookie in the jar: %v", alice.appCookies())
		}
	})
	if aliceFlow == nil || aliceFlow.callback == nil {
		t.FailNow()
	}

	t.Run("client-supplied identity headers are replaced", func(t *testing.T) {
		e := alice.echo(alice.get(oidcApp+"/x", "Auth-Username", "mallory@example.test", "Auth_Groups", "admins", "Auth-Subject", "mallory"))
		if got := e.Headers.Values("Auth-Username"); len(got) != 1 || got[0] != "alice@example.test" {
			t.Errorf("Auth-Username = %q", got)
		}
		if got := e.Headers.Values("Auth_groups"); len(got) != 0 {
			t.Errorf("the client's Auth_Groups reached the upstream: %q", got)
		}
		if got := e.Headers.Get("Cookie"); strings.Contains(got, oidcCookie) {
			t.Errorf("the session cookie reached the upstream: %q", got)
		}
	})

	t.Run("per-route authorization: required group", func(t *testing.T) {
		alice.echo(alice.get(oidcApp + "/admin/x"))
		if p := alice.get(oidcApp + "/audit/x"); p.StatusCode != http.StatusForbidden {
			t.Errorf("/audit (group auditors): status %d, want 403", p.StatusCode)
		}
	})

	t.Run("a callback with another sign-in's state cookie is refused", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, aliceFlow.callback.String(), nil)
		req.AddCookie(&http.Cookie{Name: stateCookie.Name, Value: stateCookie.Value})
		if p := newBrowser(t, s).do(req); p.StatusCode != http.StatusBadRequest {
			t.Errorf("status %d, want 400: %s", p.StatusCode, p.body)
		}
	})

	t.Run("a replayed state is refused", func(t *testing.T) {
		before := metric(t, s.replicas[0], `portcullis_authserver_oidc_failures_total{reason="state_replayed"}`)
		f := newBrowser(t, s).signIn(oidcApp+"/replay", "alice", nil)
		newBrowser(t, s).echo(f.final) // not this client: the first one signed in
		if f.callback == nil || f.state == nil {
			t.Fatalf("sign-in did not complete: %+v", f)
		}
		req, _ := http.NewRequest(http.MethodGet, f.callback.String(), nil)
		req.AddCookie(f.state)
		if p := newBrowser(t, s).do(req); p.StatusCode != http.StatusBadRequest {
			t.Errorf("replayed callback: status %d, want 400: %s", p.StatusCode, p.body)
		}
		if after := metric(t, s.replicas[0], `portcullis_authserver_oidc_failures_total{reason="state_replayed"}`); after != before+1 {
			t.Errorf("state_replayed failures %v -> %v, want +1", before, after)
		}
	})

	t.Run("an ID token with another nonce is refused", func(t *testing.T) {
		before := metric(t, s.replicas[0], `portcullis_authserver_oidc_failures_total{reason="nonce"}`)
		f := newBrowser(t, s).signIn(oidcApp+"/nonce", "alice", func(u *url.URL) {
			q := u.Query()
			q.Set("nonce", "attacker-chosen-nonce")
			u.RawQuery = q.Encode()
		})
		if f.callback == nil || f.final.StatusCode != http.StatusUnauthorized {
			t.Fatalf("callback answered %d, want 401: %s", f.final.StatusCode, f.final.body)
		}
		if after := metric(t, s.replicas[0], `portcullis_authserver_oidc_failures_total{reason="nonce"}`); after != before+1 {
			t.Errorf("nonce failures %v -> %v, want +1", before, after)
		}
	})

	t.Run("a tampered session cookie is refused", func(t *testing.T) {
		var tampered []*http.Cookie
		for _, c := range alice.appCookies() {
			if c.Name == oidcCookie {
				v := []byte(c.Value)
				v[len(v)/2] ^= 0x01
				if v[len(v)/2] == '-' || v[len(v)/2] == '_' { // keep it base64url
					v[len(v)/2] = 'A'
				}
				c = &http.Cookie{Name: c.Name, Value: string(v)}
			}
			tampered = append(tampered, c)
		}
		for _, tc := range []struct {
			accept string
			want   int
		}{{"text/html", http.StatusFound}, {"application/json", http.StatusUnauthorized}} {
			req, _ := http.NewRequest(http.MethodGet, oidcApp+"/x", nil)
			req.Header.Set("Accept", tc.accept)
			for _, c := range tampered {
				req.AddCookie(c)
			}
			p := newBrowser(t, s).do(req)
			if p.StatusCode != tc.want {
				t.Errorf("Accept %s: status %d, want %d", tc.accept, p.StatusCode, tc.want)
			}
			if tc.want == http.StatusFound && !strings.HasPrefix(p.Header.Get("Location"), s.op.Issuer+"/auth?") {
				t.Errorf("Location = %q, want the provider", p.Header.Get("Location"))
			}
		}
	})

	t.Run("a session cookie sent twice is refused, whichever comes first", func(t *testing.T) {
		var session *http.Cookie
		for _, c := range alice.appCookies() {
			if c.Name == oidcCookie {
				session = c
			}
		}
		if session == nil {
			t.Fatal("alice has no session cookie")
		}
		// A copy planted by a sibling subdomain (Domain=<parent>) arrives
		// beside ours; the server cannot tell them apart, so uses neither.
		req, _ := http.NewRequest(http.MethodGet, oidcApp+"/x", nil)
		req.Header.Set("Accept", "application/json")
		req.AddCookie(&http.Cookie{Name: oidcCookie, Value: session.Value})
		req.AddCookie(&http.Cookie{Name: oidcCookie, Value: "planted"})
		if p := newBrowser(t, s).do(req); p.StatusCode != http.StatusUnauthorized {
			t.Errorf("status %d, want 401: %s", p.StatusCode, p.body)
		}
	})

	t.Run("foreign redirect targets are refused", func(t *testing.T) {
		for _, u := range []string{
			oidcApp + "/oauth2/sign_in?rd=" + url.QueryEscape("https://evil.example/"),
			oidcApp + "/oauth2/sign_in?rd=" + url.QueryEscape("//evil.example/"),
			oidcApp + "/oauth2/sign_out?rd=" + url.QueryEscape("https://"+oidcHost+"@evil.example/"),
		} {
			if p := newBrowser(t, s).get(u); p.StatusCode != http.StatusBadRequest {
				t.Errorf("%s: status %d (Location %q), want 400", u, p.StatusCode, p.Header.Get("Location"))
			}
		}
		// An allowed target works: sign in through the login path.
		f := newBrowser(t, s).signIn(oidcApp+"/oauth2/sign_in?rd="+url.QueryEscape(oidcApp+"/landing"), "alice", nil)
		if e := newBrowser(t, s).echo(f.final); e.Path != "/landing" {
			t.Errorf("landed on %s, want /landing", e.Path)
		}
	})

	ccToken := s.op.ClientCredentialsToken(t, oidcClientID, oidcClientPass)
	t.Run("bearer tokens: the provider's JWT passes, others get 401 and never a redirect", func(t *testing.T) {
		api := newBrowser(t, s)
		e := api.echo(api.get(oidcApp+"/api/items", "Authorization", "Bearer "+ccToken))
		if got := e.Headers.Get("Auth-Subject"); got != oidcClientID {
			t.Errorf("Auth-Subject = %q, want the client id %q", got, oidcClientID)
		}
		// Forwarded by default (documented), removed with bearer.stripAuthorization.
		if got := e.Headers.Get("Authorization"); got != "Bearer "+ccToken {
			t.Errorf("upstream Authorization = %.20q..., want the bearer token forwarded", got)
		}
		e = api.echo(api.get(oidcClaimsApp+"/api/items", "Authorization", "Bearer "+ccToken))
		if got := e.Headers.Get("Authorization"); got != "" || e.Headers.Get("Auth-Subject") != oidcClientID {
			t.Errorf("stripAuthorization: upstream Authorization = %.20q..., Auth-Subject %q; want no token, the client id",
				got, e.Headers.Get("Auth-Subject"))
		}
		foreignSameKey := harness.StartOIDCProvider(t, harness.OIDCProviderConfig{
			ClientID: oidcClientID, ClientSecret: oidcClientPass, RedirectURIs: []string{oidcApp + "/oauth2/callback"},
			APIAudience: s.op.APIAudience, SigningJWK: sharedJWK,
		})
		foreignOwnKey := harness.StartOIDCProvider(t, harness.OIDCProviderConfig{
			ClientID: oidcClientID, ClientSecret: oidcClientPass, RedirectURIs: []string{oidcApp + "/oauth2/callback"},
			APIAudience: s.op.APIAudience,
		})
		for name, token := range map[string]string{
			"foreign issuer, same signing key": foreignSameKey.ClientCredentialsToken(t, oidcClientID, oidcClientPass),
			"foreign issuer, its own key":      foreignOwnKey.ClientCredentialsToken(t, oidcClientID, oidcClientPass),
			"garbage":                          "not.a.jwt",
		} {
			p := api.get(oidcApp+"/api/items", "Authorization", "Bearer "+token)
			if p.StatusCode != http.StatusUnauthorized || p.Header.Get("Location") != "" ||
				!strings.HasPrefix(p.Header.Get("WWW-Authenticate"), "Bearer ") {
				t.Errorf("%s: status %d, Location %q, WWW-Authenticate %q; want 401 with a Bearer challenge",
					name, p.StatusCode, p.Header.Get("Location"), p.Header.Get("WWW-Authenticate"))
			}
		}
		// An API route without credentials: 401, not a sign-in.
		if p := api.get(oidcApp + "/api/items"); p.StatusCode != http.StatusUnauthorized || p.Header.Get("Location") != "" {
			t.Errorf("API route without a token: status %d, Location %q", p.StatusCode, p.Header.Get("Location"))
		}
	})

	t.Run("the session works on a second replica with the same key", func(t *testing.T) {
		if err := s.Objects.Apply(context.Background(), oidcExtensionService("oidc-b")); err != nil {
			t.Fatal(err)
		}
		allowedB := `portcullis_authserver_checks_total{backend="oidc",result="allowed"}`
		harness.Eventually(t, 30*time.Second, func() error {
			before := metric(t, s.replicas[1], allowedB)
			p := alice.get(oidcApp + "/replica")
			if p.StatusCode != http.StatusOK {
				return fmt.Errorf("status %d: %s", p.StatusCode, p.body)
			}
			if metric(t, s.replicas[1], allowedB) <= before {
				return fmt.Errorf("replica b did not answer yet")
			}
			return nil
		})
	})

	t.Run("an expired session is refreshed without a new sign-in", func(t *testing.T) {
		// Past the access and ID tokens' lifetime (and the bearer token's).
		time.Sleep(oidcTokenTTL + 2*time.Second)
		refreshes := `portcullis_authserver_oidc_events_total{event="refresh"}`
		before := metric(t, s.replicas[1], refreshes)
		p := alice.get(oidcApp + "/after-expiry")
		e := alice.echo(p)
		if e.Headers.Get("Auth-Username") != "alice@example.test" {
			t.Errorf("Auth-Username = %q after refresh", e.Headers.Get("Auth-Username"))
		}
		var renewed bool
		for _, c := range p.Cookies() {
			renewed = renewed || (c.Name == oidcCookie && c.Value != "" && c.Secure && c.HttpOnly)
		}
		if !renewed {
			t.Errorf("no new session cookie on the allowed response: %v", p.Header.Values("Set-Cookie"))
		}
		if after := metric(t, s.replicas[1], refreshes); after != before+1 {
			t.Errorf("refresh events %v -> %v, want +1", before, after)
		}
		// The renewed cookie serves without another refresh.
		alice.echo(alice.get(oidcApp + "/after-refresh"))
		if after := metric(t, s.replicas[1], refreshes); after != before+1 {
			t.Errorf("refresh events %v -> %v after a second request, want no new refresh", before, after)
		}

		p = newBrowser(t, s).get(oidcApp+"/api/items", "Authorization", "Bearer "+ccToken)
		if p.StatusCode != http.StatusUnauthorized || p.Header.Get("Location") != "" {
			t.Errorf("expired bearer token: status %d, Location %q, want 401", p.StatusCode, p.Header.Get("Location"))
		}
	})

	t.Run("a session too big for one cookie is chunked and read back", func(t *testing.T) {
		big := newBrowser(t, s)
		f := big.signIn(oidcApp+"/big", "big", nil)
		e := big.echo(f.final)
		if !strings.Contains(e.Headers.Get("Auth-Groups"), "team-with-a-rather-long-name-149") {
			t.Errorf("Auth-Groups = %.80q...", e.Headers.Get("Auth-Groups"))
		}
		var names []string
		for _, c := range big.appCookies() {
			names = append(names, c.Name)
		}
		if !strings.Contains(strings.Join(names, ","), oidcCookie+"_1") {
			t.Errorf("cookies %v, want chunks %s_0, %s_1, ...", names, oidcCookie, oidcCookie)
		}
		big.echo(big.get(oidcApp + "/big/again"))
	})

	huge := newBrowser(t, s)
	t.Run("a user in too many groups for the cookies gets an error page, counted, and no cookie", func(t *testing.T) {
		before := s.tooLarge(t)
		f := huge.signIn(oidcApp+"/huge", "huge", nil)
		if f.callback == nil {
			t.Fatalf("never came back to the callback: %d %s", f.final.StatusCode, f.final.body)
		}
		if p := f.final; p.StatusCode != http.StatusInternalServerError || !strings.Contains(p.body, "too large") ||
			strings.Contains(p.body, "authorization failed") || !strings.HasPrefix(p.Header.Get("Content-Type"), "text/html") {
			t.Errorf("callback: status %d %q: %.300s; want 500 with the page that says the account information is too large",
				p.StatusCode, p.Header.Get("Content-Type"), p.body)
		}
		for _, c := range huge.appCookies() {
			t.Errorf("cookie %s left in the browser (the state cookie must be cleared, no session set)", c.Name)
		}
		if after := s.tooLarge(t); after != before+1 {
			t.Errorf("session_too_large failures %v -> %v, want +1", before, after)
		}
	})

	t.Run("with a session claim filter the same user signs in and gets back to the page", func(t *testing.T) {
		f := huge.signIn(oidcClaimsApp+"/claims/page?x=1", "huge", nil)
		e := huge.echo(f.final)
		if e.Path != "/claims/page" || e.Query != "x=1" {
			t.Errorf("came back to %s?%s, want /claims/page?x=1", e.Path, e.Query)
		}
		if err := harness.WantHeaders(e.Headers, map[string]string{"Auth-Subject": "huge", "Auth-Username": "huge@example.test"}); err != nil {
			t.Error(err)
		}
		if g := e.Headers.Get("Auth-Groups"); g != "" {
			t.Errorf("Auth-Groups = %.60q..., want none (session.claims drops groups)", g)
		}
		var names []string
		for _, c := range huge.cookiesOf(oidcClaimsApp) {
			names = append(names, c.Name)
		}
		if strings.Join(names, ",") != oidcCookie {
			t.Errorf("cookies %v, want the one session cookie %s", names, oidcCookie)
		}
		huge.echo(huge.get(oidcClaimsApp + "/claims/again"))
	})

	t.Run("a GET of the logout path is a page with a sign-out button, nothing more", func(t *testing.T) {
		p := alice.get(oidcApp + "/oauth2/sign_out")
		if p.StatusCode != http.StatusOK || !strings.HasPrefix(p.Header.Get("Content-Type"), "text/html") ||
			!strings.Contains(p.body, `<form method="post" action="/oauth2/sign_out">`) {
			t.Fatalf("GET /oauth2/sign_out: status %d %q: %s", p.StatusCode, p.Header.Get("Content-Type"), p.body)
		}
		if len(p.Header.Values("Set-Cookie")) != 0 {
			t.Errorf("GET cleared cookies: %v", p.Header.Values("Set-Cookie"))
		}
		alice.echo(alice.get(oidcApp + "/still-signed-in"))
	})

	t.Run("a sign-out POST from another site is refused", func(t *testing.T) {
		for _, h := range [][2]string{
			{"Origin", "https://evil.example"},
			{"Origin", "https://sibling.oidc.test"},
			{"Sec-Fetch-Site", "cross-site"},
			{"Sec-Fetch-Site", "same-site"},
			{"", ""}, // says nothing: refused too
		} {
			if p := alice.post(oidcApp+"/oauth2/sign_out", h[0], h[1]); p.StatusCode != http.StatusForbidden {
				t.Errorf("POST with %s %q: status %d, want 403 (Location %q)", h[0], h[1], p.StatusCode, p.Header.Get("Location"))
			}
		}
		alice.echo(alice.get(oidcApp + "/still-signed-in"))
	})

	t.Run("logout clears the session and goes through the provider's end-session endpoint", func(t *testing.T) {
		// What a browser sends when the page's button is pressed.
		p := alice.post(oidcApp+"/oauth2/sign_out", "Origin", oidcApp)
		loc := p.location(t)
		if p.StatusCode != http.StatusFound || !strings.HasPrefix(loc.String(), s.op.Issuer+"/session/end?") {
			t.Fatalf("logout: status %d Location %s, want 302 to the end-session endpoint", p.StatusCode, loc)
		}
		// client_id, not the raw ID token, names the sign-out in the URL.
		if q := loc.Query(); q.Has("id_token_hint") || q.Get("client_id") != oidcClientID || q.Get("post_logout_redirect_uri") != oidcSignedOut {
			t.Errorf("end-session query = %v", q)
		}
		for _, c := range alice.appCookies() {
			if c.Name == oidcCookie {
				t.Errorf("session cookie still in the jar after logout")
			}
		}
		// Confirm at the provider; it sends us to post_logout_redirect_uri.
		p = alice.get(loc.String())
		for step := 0; step < 10 && (p.StatusCode != http.StatusOK || p.Request.URL.Host != oidcHost); step++ {
			if p.StatusCode == http.StatusOK {
				p = alice.submitForm(p, nil)
			} else {
				p = alice.get(p.location(t).String())
			}
		}
		if e := alice.echo(p); e.Path != "/public/signed-out" {
			t.Errorf("after logout landed on %s", e.Path)
		}
		// Signed out here and at the provider: the next visit shows the
		// provider's login form again.
		p = alice.get(oidcApp + "/")
		if p.StatusCode != http.StatusFound {
			t.Fatalf("after logout: status %d, want 302", p.StatusCode)
		}
		for p.StatusCode >= 300 && p.StatusCode < 400 {
			p = alice.get(p.location(t).String())
		}
		if p.Request.URL.Host == oidcHost || !strings.Contains(p.body, `name="login"`) {
			t.Errorf("after logout the provider did not ask to sign in again: %s %d", p.Request.URL, p.StatusCode)
		}
	})
}
