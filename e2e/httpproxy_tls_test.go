package e2e

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/e2e/harness"
)

// startTLSEcho serves an Echo over TLS (HTTP/1.1) with the key pair on
// 127.0.0.1, stopped when the test ends.
func startTLSEcho(t *testing.T, name string, kp *harness.KeyPair) *harness.Echo {
	t.Helper()
	cert, err := tls.X509KeyPair(kp.CertPEM, kp.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	e := &harness.Echo{Name: name, Addr: l.Addr().String(), Port: l.Addr().(*net.TCPAddr).Port}
	srv := &http.Server{Handler: e}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return e
}

// TestHTTPProxyUpstreamSubjectNames: validation.subjectNames through the
// file provider into the real Envoy: an upstream whose certificate (of
// the validation's CA) presents the second of the names is reached, one
// presenting none of them fails the handshake (503), and so does one
// presenting a listed name but signed by another CA.
func TestHTTPProxyUpstreamSubjectNames(t *testing.T) {
	ca, otherCA := harness.NewCA(t, "upstream-ca"), harness.NewCA(t, "other-ca")
	good := startTLSEcho(t, "good", ca.Issue(t, "good.upstream.test"))
	unnamed := startTLSEcho(t, "unnamed", ca.Issue(t, "unlisted.upstream.test"))
	foreign := startTLSEcho(t, "foreign", otherCA.Issue(t, "good.upstream.test"))
	dir := t.TempDir()
	httpAddr, _, _ := harness.StartEnvoyAndControlPlane(t, "--provider", "file", "-f", dir)

	validation := &contourv1.UpstreamValidation{
		CACertificate: "upstream-ca",
		SubjectName:   "primary.upstream.test",
		SubjectNames:  []string{"primary.upstream.test", "good.upstream.test"},
	}
	route := func(prefix, svc string) contourv1.Route {
		return contourv1.Route{
			Conditions: []contourv1.MatchCondition{{Prefix: prefix}},
			Services:   []contourv1.Service{{Name: svc, Port: 443, Protocol: ptr.To("tls"), UpstreamValidation: validation}},
		}
	}
	all := []client.Object{ca.Secret("default", "upstream-ca")}
	for _, e := range []*harness.Echo{good, unnamed, foreign} {
		all = append(all, harness.LoopbackEndpointSlice("default", e.Name, 443, e.Port)...)
	}
	all = append(all, &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "names"}, Spec: contourv1.HTTPProxySpec{
		VirtualHost: &contourv1.VirtualHost{Fqdn: "names.example.com"},
		Routes:      []contourv1.Route{route("/good", "good"), route("/unnamed", "unnamed"), route("/foreign", "foreign")},
	}})
	if err := harness.Dir(dir).Apply(context.Background(), all...); err != nil {
		t.Fatal(err)
	}
	c := harness.HTTPClient(httpAddr)
	got := harness.EventuallyEcho(t, c, harness.MustRequest(t, "http://names.example.com/good"), http.StatusOK)
	if got.Name != "good" {
		t.Fatalf("answered by %q, want good", got.Name)
	}
	for _, tc := range []struct{ path, why string }{
		{"/unnamed", "a certificate presenting none of the names"},
		{"/foreign", "a listed name signed by another CA"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			resp := doRequest(t, c, harness.MustRequest(t, "http://names.example.com"+tc.path))
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusServiceUnavailable {
				t.Fatalf("%s: status %d (%s), want 503", tc.why, resp.StatusCode, body)
			}
		})
	}
	if n := unnamed.Requests() + foreign.Requests(); n != 0 {
		t.Errorf("the refused upstreams got %d requests", n)
	}
}
