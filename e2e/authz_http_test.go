package e2e

import (
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/apis/projectcontour/v1alpha1"
	"github.com/portcullis/portcullis/e2e/harness"
)

// httpAuth is an HTTP authorization server (serviceType http): 200 with
// the user in x-auth-user for the good token, 403 otherwise. It also adds
// a header the HTTPProxy does not allow upstream, and records what each
// check carried, so that the filter's settings can be seen to apply.
type httpAuth struct {
	checks atomic.Int64
	mu     sync.Mutex
	last   *http.Request
}

func (a *httpAuth) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.checks.Add(1)
	a.mu.Lock()
	a.last = r.Clone(context.Background())
	a.mu.Unlock()
	if r.Header.Get("X-Token") != "good" {
		w.WriteHeader(http.StatusForbidden)
		return
	}
	w.Header().Set("X-Auth-User", "alice")
	w.Header().Set("X-Auth-Internal", "not-for-upstream")
	w.WriteHeader(http.StatusOK)
}

func (a *httpAuth) lastCheck() *http.Request {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.last
}

// startHTTPAuth serves a on 127.0.0.1, over HTTP/1.1 and plaintext HTTP/2
// (the ExtensionService's h2c), and returns its port.
func startHTTPAuth(t *testing.T, a *httpAuth) int {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	srv := &http.Server{Handler: a, Protocols: &p, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(func() { _ = srv.Close() })
	return lis.Addr().(*net.TCPAddr).Port
}

// An HTTPProxy whose authorization server is an HTTP one, through the real
// Envoy: the check goes to the server with the path prefix and only the
// allowed request headers; an allowed request reaches the upstream with
// the allowed answer header (and not the others); a denied one gets the
// server's 403 and never reaches the upstream; a disabled route is open
// and never checked.
func TestHTTPAuthorizationServer(t *testing.T) {
	s, c := harness.StartFileStack(t)
	ctx := context.Background()
	auth := &httpAuth{}
	cert := s.CA.Issue(t, "httpauth.example.com")
	h2c := "h2c"
	objs := []client.Object{cert.Secret("default", "server-tls")}
	objs = append(objs, s.Loopback("default", "echo", 80, c.Echo.Port)...)
	objs = append(objs, s.Loopback(harness.AuthNamespace, "http-auth", 9443, startHTTPAuth(t, auth))...)
	echo := []contourv1.Service{{Name: "echo", Port: 80}}
	objs = append(objs,
		&v1alpha1.ExtensionService{ObjectMeta: metav1.ObjectMeta{Namespace: harness.AuthNamespace, Name: "http-auth"},
			Spec: v1alpha1.ExtensionServiceSpec{Protocol: &h2c, Services: []v1alpha1.ExtensionServiceTarget{{Name: "http-auth", Port: 9443}}}},
		&contourv1.HTTPProxy{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "httpauth"},
			Spec: contourv1.HTTPProxySpec{
				VirtualHost: &contourv1.VirtualHost{
					Fqdn: "httpauth.example.com",
					TLS:  &contourv1.TLS{SecretName: "server-tls"},
					Authorization: &contourv1.AuthorizationServer{
						ExtensionServiceRef: contourv1.ExtensionServiceReference{Namespace: harness.AuthNamespace, Name: "http-auth"},
						ServiceType:         contourv1.AuthorizationHTTPService,
						ResponseTimeout:     "2s",
						HTTPServerSettings: &contourv1.HTTPAuthorizationServerSettings{
							PathPrefix:                  "/auth",
							AllowedAuthorizationHeaders: []contourv1.HTTPAuthorizationServerAllowedHeaders{{Exact: "x-token"}},
							AllowedUpstreamHeaders:      []contourv1.HTTPAuthorizationServerAllowedHeaders{{Exact: "x-auth-user"}},
						},
					},
				},
				Routes: []contourv1.Route{
					{Conditions: []contourv1.MatchCondition{{Prefix: "/open"}}, AuthPolicy: &contourv1.AuthorizationPolicy{Disabled: true}, Services: echo},
					{Services: echo},
				},
			},
		},
	)
	if err := s.Objects.Apply(ctx, objs...); err != nil {
		t.Fatal(err)
	}
	https := s.HTTPS(s.CA.CertPEM)

	t.Run("allowed: the upstream gets the allowed answer header only", func(t *testing.T) {
		req := harness.MustRequest(t, "https://httpauth.example.com/page?q=1")
		req.Header.Set("X-Token", "good")
		req.Header.Set("X-Secret", "not-for-the-auth-server")
		got := harness.EventuallyEcho(t, https, req, http.StatusOK)
		if u := got.Headers.Get("X-Auth-User"); u != "alice" {
			t.Errorf("upstream saw X-Auth-User %q, want alice", u)
		}
		if v := got.Headers.Get("X-Auth-Internal"); v != "" {
			t.Errorf("upstream saw X-Auth-Internal %q: it is not in allowedUpstreamHeaders", v)
		}
		check := auth.lastCheck()
		if check == nil {
			t.Fatal("the auth server saw no check")
		}
		if check.URL.Path != "/auth/page" {
			t.Errorf("the check's path is %q, want /auth/page (pathPrefix /auth)", check.URL.Path)
		}
		if v := check.Header.Get("X-Token"); v != "good" {
			t.Errorf("the check carried X-Token %q, want good (allowedAuthorizationHeaders)", v)
		}
		if v := check.Header.Get("X-Secret"); v != "" {
			t.Errorf("the check carried X-Secret %q: it is not in allowedAuthorizationHeaders", v)
		}
	})

	t.Run("denied: the server's 403, the upstream never reached", func(t *testing.T) {
		before := c.Echo.Requests()
		for _, token := range []string{"", "bad"} {
			req := harness.MustRequest(t, "https://httpauth.example.com/page")
			if token != "" {
				req.Header.Set("X-Token", token)
			}
			resp, err := https.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("token %q: status %d, want 403", token, resp.StatusCode)
			}
		}
		if after := c.Echo.Requests(); after != before {
			t.Errorf("the upstream received %d denied requests", after-before)
		}
	})

	t.Run("a disabled route is open and never checked", func(t *testing.T) {
		before := auth.checks.Load()
		got := harness.EventuallyEcho(t, https, harness.MustRequest(t, "https://httpauth.example.com/open/x"), http.StatusOK)
		if u := got.Headers.Get("X-Auth-User"); u != "" {
			t.Errorf("upstream saw X-Auth-User %q on an unchecked route", u)
		}
		if after := auth.checks.Load(); after != before {
			t.Errorf("the auth server answered %d checks for a disabled route", after-before)
		}
	})

	t.Run("the HTTPProxy is valid", func(t *testing.T) {
		st, reason, err := s.Validity("default", "httpauth")
		if err != nil || st != string(metav1.ConditionTrue) {
			t.Errorf("Valid=%s (%s), %v", st, reason, err)
		}
	})
}
