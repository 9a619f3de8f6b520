package e2e

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/apis/projectcontour/v1alpha1"
	"github.com/portcullis/portcullis/e2e/harness"
)

// Real peers answer in seconds: a bcrypt cost of 12, an LDAP lookup, a
// JWKS fetch, a provider's first sign-in after it started. These tests put
// a harness.SlowPeer between the real Envoy and each kind of service Envoy
// calls, and assert that a call is bounded by the ExtensionService's
// response timeout and by nothing shorter, and is never sent twice.

const slowNamespace = "portcullis-slow"

// slowStack is Envoy and the control plane (file provider), the echo
// upstream, and a CA for the virtual hosts' certificates.
type slowStack struct {
	ca        *harness.CA
	httpsAddr string
	dir       harness.Dir
	envoy     *harness.Envoy
	https     *http.Client
	objs      []client.Object
}

func startSlowStack(t *testing.T) *slowStack {
	echo := harness.StartEcho(t, "echo")
	s := &slowStack{ca: harness.NewCA(t, "portcullis-slow"), dir: harness.Dir(t.TempDir())}
	httpsAddr := harness.FreeAddr(t)
	cp := harness.StartControlPlane(t, "portcullis", harness.FreeAddr(t), httpsAddr, "--provider", "file", "-f", string(s.dir))
	s.envoy = harness.StartEnvoyOn(t, cp.XDSAddr)
	s.httpsAddr = httpsAddr
	s.https = harness.HTTPSClient(s.ca.CertPEM, httpsAddr)
	s.https.Timeout = 30 * time.Second
	s.objs = append([]client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: slowNamespace}}},
		harness.LoopbackEndpointSlice(slowNamespace, "echo", 80, echo.Port)...)
	return s
}

// extensionService is an h2c ExtensionService whose one endpoint is addr
// (a SlowPeer), with this response timeout ("" for none).
func (s *slowStack) extensionService(t *testing.T, name, addr, response string) {
	h2c := "h2c"
	ext := &v1alpha1.ExtensionService{ObjectMeta: metav1.ObjectMeta{Namespace: slowNamespace, Name: name},
		Spec: v1alpha1.ExtensionServiceSpec{Protocol: &h2c, Services: []v1alpha1.ExtensionServiceTarget{{Name: name, Port: 9000}}}}
	if response != "" {
		ext.Spec.TimeoutPolicy = &contourv1.TimeoutPolicy{Response: response}
	}
	s.objs = append(s.objs, harness.LoopbackEndpointSlice(slowNamespace, name, 9000, harness.Port(t, addr))...)
	s.objs = append(s.objs, ext)
}

// host is an HTTPS virtual host routing to the echo upstream.
func (s *slowStack) host(t *testing.T, fqdn string, vh func(*contourv1.VirtualHost)) {
	secret := fqdn + "-tls"
	v := &contourv1.VirtualHost{Fqdn: fqdn, TLS: &contourv1.TLS{SecretName: secret}}
	vh(v)
	s.objs = append(s.objs, s.ca.Issue(t, fqdn).Secret(slowNamespace, secret),
		&contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: slowNamespace, Name: fqdn},
			Spec: contourv1.HTTPProxySpec{VirtualHost: v, Routes: []contourv1.Route{{Services: []contourv1.Service{{Name: "echo", Port: 80}}}}}})
}

func (s *slowStack) apply(t *testing.T) {
	if err := s.dir.Apply(context.Background(), s.objs...); err != nil {
		t.Fatal(err)
	}
}

// get fetches url and returns the status and the upstream's view of the
// request (nil when the answer did not come from the upstream).
func (s *slowStack) get(url string) (int, *harness.EchoRequest, error) {
	resp, err := s.https.Get(url)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	e, _ := harness.DecodeEcho(body)
	return resp.StatusCode, e, nil
}

// stat is one of Envoy's counters for an ExtensionService's cluster.
func (s *slowStack) stat(t *testing.T, name, counter string) int64 {
	t.Helper()
	v, err := s.envoy.Stat("cluster.extension/" + slowNamespace + "/" + name + "." + counter)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// parallel runs n calls of f at once and returns their errors.
func parallel(n int, f func() error) []error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = f() })
	}
	wg.Wait()
	return errs
}

// TestSlowAuthServer: a check answered in 1 s or 4 s under a response
// timeout of 5 s is allowed every time, and sent once; at 6 s the request
// fails closed (403) or open (the upstream, without the auth server's
// headers) as each virtual host says, after the 5 s and not before. A
// host of the same ExtensionService with a response timeout of its own
// (2 s) is cut at its 2 s while the others wait their 5 s: TLS hosts'
// HCMs are written from an encoding shared by hosts of the same settings,
// and the timeout is one of them.
func TestSlowAuthServer(t *testing.T) {
	addr := harness.FreeAddr(t)
	harness.StartProcess(t, "authserver", harness.BuildBinary(t, "github.com/portcullis/portcullis/authserver/cmd/authserver"),
		"testserver", "--address", addr)
	peer := harness.StartSlowPeer(t, addr)
	s := startSlowStack(t)
	s.extensionService(t, "auth", peer.Addr, "5s")
	for fqdn, open := range map[string]bool{"closed.slow.test": false, "open.slow.test": true} {
		s.host(t, fqdn, func(v *contourv1.VirtualHost) {
			v.Authorization = &contourv1.AuthorizationServer{ExtensionServiceRef: contourv1.ExtensionServiceReference{Namespace: slowNamespace, Name: "auth"}, FailOpen: open}
		})
	}
	s.host(t, "short.slow.test", func(v *contourv1.VirtualHost) {
		v.Authorization = &contourv1.AuthorizationServer{ExtensionServiceRef: contourv1.ExtensionServiceReference{Namespace: slowNamespace, Name: "auth"}, ResponseTimeout: "2s"}
	})
	s.apply(t)
	authorized := func(url string) error {
		code, e, err := s.get(url)
		switch {
		case err != nil:
			return err
		case code != http.StatusOK || e == nil:
			return fmt.Errorf("%s: status %d, want 200 from the upstream", url, code)
		case e.Headers.Get("Auth-Handler") != "testserver":
			return fmt.Errorf("%s: the upstream saw no Auth-Handler: not authorized", url)
		}
		return nil
	}
	harness.Eventually(t, 30*time.Second, func() error { return authorized("https://closed.slow.test/") })
	sent := s.stat(t, "auth", "upstream_rq_total")

	for _, delay := range []time.Duration{time.Second, 4 * time.Second} {
		peer.SetFault(harness.Fault{Delay: delay})
		for i, err := range parallel(3, func() error { return authorized("https://closed.slow.test/") }) {
			if err != nil {
				t.Errorf("check answered in %v under response: 5s, request %d: %v", delay, i, err)
			}
		}
	}

	peer.SetFault(harness.Fault{Delay: 6 * time.Second})
	start := time.Now()
	errs := parallel(2, func() error {
		code, e, err := s.get("https://closed.slow.test/")
		if err == nil && code != http.StatusForbidden {
			err = fmt.Errorf("failOpen false: status %d (upstream %v), want 403", code, e != nil)
		}
		return err
	})
	errs = append(errs, func() error {
		code, e, err := s.get("https://open.slow.test/")
		switch {
		case err != nil:
			return err
		case code != http.StatusOK || e == nil || e.Headers.Get("Auth-Handler") != "":
			return fmt.Errorf("failOpen true: status %d, upstream %v; want 200 from the upstream without the auth server's headers", code, e != nil)
		}
		return nil
	}())
	// A lower bound, not a timing goal: the 5 s timeout decided, nothing shorter.
	if took := time.Since(start); took < 4500*time.Millisecond {
		t.Errorf("checks answered in 6 s were cut after %v: want the 5 s response timeout", took)
	}
	for _, err := range errs {
		if err != nil {
			t.Errorf("check answered in 6 s: %v", err)
		}
	}

	// 8 checks slower than 250 ms, each sent once: no per-try timeout, no
	// retry (a retry would have been a second upstream request).
	if n := s.stat(t, "auth", "upstream_rq_per_try_timeout"); n != 0 {
		t.Errorf("%d checks cut by a per-try timeout, want none", n)
	}
	if n := s.stat(t, "auth", "upstream_rq_retry"); n != 0 {
		t.Errorf("%d checks sent again, want none", n)
	}
	if n := s.stat(t, "auth", "upstream_rq_total") - sent; n != 9 {
		t.Errorf("%d checks sent for 9 requests, want 9", n)
	}

	// At 4 s, the same server, the same failOpen (false): the 5 s host
	// waits and is allowed, the 2 s host is refused, after its 2 s.
	peer.SetFault(harness.Fault{})
	harness.Eventually(t, 30*time.Second, func() error { return authorized("https://short.slow.test/") })
	peer.SetFault(harness.Fault{Delay: 4 * time.Second})
	var short time.Duration
	errs = parallel(2, func() error { return authorized("https://closed.slow.test/") })
	errs = append(errs, func() error {
		start := time.Now()
		code, e, err := s.get("https://short.slow.test/")
		short = time.Since(start)
		if err == nil && code != http.StatusForbidden {
			err = fmt.Errorf("responseTimeout 2s: status %d (upstream %v), want 403", code, e != nil)
		}
		return err
	}())
	for _, err := range errs {
		if err != nil {
			t.Errorf("check answered in 4 s: %v", err)
		}
	}
	// A lower bound, not a timing goal: the host's own 2 s decided.
	if short < 1500*time.Millisecond {
		t.Errorf("the 2 s host's check was cut after %v: want its 2 s response timeout", short)
	}
}

// TestSlowExtProc: a processor whose every answer takes 1 s (the request
// headers, then the response headers) completes, its stream never cut or
// sent again: under a response timeout of 5 s, and under none (each
// message then has 2 s; Envoy's default of 200 ms failed it).
func TestSlowExtProc(t *testing.T) {
	proc := harness.StartExtProcServer(t, markingProcessor("slow"))
	peer := harness.StartSlowPeer(t, proc.Addr)
	s := startSlowStack(t)
	hosts := map[string]string{"extproc-5s": "timeout.slow.test", "extproc": "default.slow.test"}
	s.extensionService(t, "extproc-5s", peer.Addr, "5s")
	s.extensionService(t, "extproc", peer.Addr, "")
	for ext, fqdn := range hosts {
		s.host(t, fqdn, func(v *contourv1.VirtualHost) {
			v.ExtProc = &contourv1.ExternalProcessor{Processor: &contourv1.ExtProc{
				GRPCService:    &contourv1.GRPCService{ExtensionServiceRef: contourv1.ExtensionServiceReference{Namespace: slowNamespace, Name: ext}},
				ProcessingMode: &contourv1.ProcessingMode{RequestHeaderMode: contourv1.ProcessingModeSend, ResponseHeaderMode: contourv1.ProcessingModeSend},
			}}
		})
	}
	s.apply(t)
	processed := func(fqdn string) error {
		p, err := fetchProcessed(s.https, "https://"+fqdn+"/")
		if err == nil && (p.request != "slow" || p.response != "slow") {
			err = fmt.Errorf("processed by %+v, want slow both ways", p)
		}
		return err
	}
	for _, fqdn := range hosts {
		harness.Eventually(t, 30*time.Second, func() error { return processed(fqdn) })
	}

	peer.SetFault(harness.Fault{Delay: time.Second})
	start := time.Now()
	for ext, fqdn := range hosts {
		for i, err := range parallel(2, func() error { return processed(fqdn) }) {
			if err != nil {
				t.Errorf("%s, processor answering in 1 s, request %d: %v", ext, i, err)
			}
		}
		if n := s.stat(t, ext, "upstream_rq_per_try_timeout") + s.stat(t, ext, "upstream_rq_retry"); n != 0 {
			t.Errorf("%s: %d streams cut by a per-try timeout or sent again, want none", ext, n)
		}
	}
	if took := time.Since(start); took < 4*time.Second {
		t.Errorf("4 requests took %v: the 1 s delay on each of two answers was not in the path", took)
	}
}

// TestSlowOIDCCallback: a sign-in whose code exchange takes 2 s (the
// provider's answers come late) signs in once, with one code exchange. The
// callback's check used to be cut after 250 ms and sent again, and the
// second one replayed its one-time state: "this sign-in was already
// completed".
func TestSlowOIDCCallback(t *testing.T) {
	const host = "slow.oidc.test"
	providerPort := harness.FreePort(t)
	peer := harness.StartSlowPeer(t, fmt.Sprintf("127.0.0.1:%d", providerPort))
	op := harness.StartOIDCProvider(t, harness.OIDCProviderConfig{ClientID: oidcClientID, ClientSecret: oidcClientPass,
		RedirectURIs: []string{"https://" + host + "/oauth2/callback"}, Port: providerPort, Issuer: "http://" + peer.Addr})
	key := make([]byte, 32)
	rand.Read(key)
	keyFile, config := filepath.Join(t.TempDir(), "cookie-key"), filepath.Join(t.TempDir(), "oidc.yaml")
	writeTestFile(t, keyFile, base64.StdEncoding.EncodeToString(key))
	writeTestFile(t, config, fmt.Sprintf("issuer: %s\nallowInsecureIssuer: true\nclientID: %s\nclientSecretEnv: OIDC_CLIENT_SECRET\n"+
		"allowedRedirectHosts: [%s]\ncookie:\n  keyFile: %s\n", op.Issuer, oidcClientID, host, keyFile))
	addr, m := startOIDCAuthServer(t, harness.BuildBinary(t, "github.com/portcullis/portcullis/authserver/cmd/authserver"), "oidc", config, oidcClientPass)

	s := startSlowStack(t)
	s.extensionService(t, "oidc", addr, "5s")
	s.host(t, host, func(v *contourv1.VirtualHost) {
		v.Authorization = &contourv1.AuthorizationServer{ExtensionServiceRef: contourv1.ExtensionServiceReference{Namespace: slowNamespace, Name: "oidc"}}
	})
	s.apply(t)
	harness.Eventually(t, 30*time.Second, func() error {
		code, _, err := s.get("https://" + host + "/")
		if err == nil && code != http.StatusFound {
			err = fmt.Errorf("status %d, want 302 to the provider", code)
		}
		return err
	})

	b := newBrowser(t, &oidcStack{Stack: &harness.Stack{HTTPSAddr: s.httpsAddr}, ca: s.ca, op: op})
	var exchanges int
	b.beforeCallback = func() {
		peer.SetFault(harness.Fault{Delay: 2 * time.Second})
		exchanges = len(tokenRequests(peer))
	}
	f := b.signIn("https://"+host+"/after/sign-in?x=1", "alice", nil)
	if f.callback == nil || f.final == nil {
		t.Fatalf("the sign-in did not come back through the callback: %+v", f)
	}
	e := b.echo(f.final)
	if e.Path != "/after/sign-in" || e.Query != "x=1" {
		t.Errorf("signed in to %s?%s, want the original URL", e.Path, e.Query)
	}
	if n := len(tokenRequests(peer)) - exchanges; n != 1 {
		t.Errorf("%d code exchanges for one callback, want 1", n)
	}
	if got := metric(t, m, `portcullis_authserver_oidc_events_total{event="callback"}`); got != 1 {
		t.Errorf("%v callbacks signed in, want 1", got)
	}
	if n := s.stat(t, "oidc", "upstream_rq_retry") + s.stat(t, "oidc", "upstream_rq_per_try_timeout"); n != 0 {
		t.Errorf("%d checks cut or sent again, want none", n)
	}
}

// tokenRequests are the calls to the provider's token endpoint so far.
func tokenRequests(p *harness.SlowPeer) []string {
	var out []string
	for _, r := range p.Requests() {
		if strings.HasPrefix(r, "POST /token ") {
			out = append(out, r)
		}
	}
	return out
}

// TestSlowJWKS: Envoy's fetch of a remote JWKS that answers in 2 s, under
// a timeout of 5 s, verifies tokens; at 6 s the fetch fails and tokens are
// refused (401), never let through unverified.
func TestSlowJWKS(t *testing.T) {
	echo := harness.StartEcho(t, "echo")
	jwks := startJWKS(t)
	key := newSigningKey(t, "k1")
	jwks.set(key)
	peer := harness.StartSlowPeer(t, strings.TrimSuffix(strings.TrimPrefix(jwks.url, "http://"), "/jwks"))
	peer.SetFault(harness.Fault{Delay: 2 * time.Second})

	ca := harness.NewCA(t, "portcullis-slow")
	dir := t.TempDir()
	_, httpsAddr, _ := harness.StartEnvoyAndControlPlane(t, "--provider", "file", "-f", dir, "--allow-loopback-external-names")
	objs := append(harness.LoopbackEndpointSlice("default", "echo", 80, echo.Port), ca.Issue(t, "jwt.slow.test", "late.slow.test").Secret("default", "jwt-cert"))
	for _, host := range []string{"jwt.slow.test", "late.slow.test"} {
		objs = append(objs, &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: host}, Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{Fqdn: host, TLS: &contourv1.TLS{SecretName: "jwt-cert"},
				JWTProviders: []contourv1.JWTProvider{{Name: "idp", Default: true, Issuer: "https://issuer.test",
					RemoteJWKS: contourv1.RemoteJWKS{URI: "http://" + peer.Addr + "/jwks", Timeout: "5s", CacheDuration: "1h"}}}},
			Routes: []contourv1.Route{{Services: []contourv1.Service{{Name: "echo", Port: 80}}}}}})
	}
	if err := harness.Dir(dir).Apply(context.Background(), objs...); err != nil {
		t.Fatal(err)
	}
	c := harness.HTTPSClient(ca.CertPEM, httpsAddr)
	c.Timeout = 30 * time.Second
	token := key.sign(t, claims{"iss": "https://issuer.test", "sub": "alice", "exp": time.Now().Add(time.Hour).Unix()})
	send := func(host string) (int, error) {
		req, _ := http.NewRequest(http.MethodGet, "https://"+host+"/", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := c.Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	// The first request waits for the fetch (2 s).
	harness.Eventually(t, 60*time.Second, func() error {
		code, err := send("jwt.slow.test")
		if err == nil && code != http.StatusOK {
			err = fmt.Errorf("a valid token with the JWKS answering in 2 s: status %d, want 200", code)
		}
		return err
	})
	peer.SetFault(harness.Fault{Delay: 6 * time.Second})
	if code, err := send("late.slow.test"); err != nil || code != http.StatusUnauthorized {
		t.Errorf("a token whose JWKS answers after the 5 s timeout: status %d, %v; want 401", code, err)
	}
}
