package e2e

import (
	"context"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/e2e/harness"
)

// annotatedService is the Service and EndpointSlice of a loopback upstream
// (port name "main") with the given annotations.
func annotatedService(name string, port, target int, annotations map[string]string) []client.Object {
	objs := harness.LoopbackEndpointSlice("default", name, port, target)
	objs[0].(*corev1.Service).Annotations = annotations
	return objs
}

// TestHTTPProxyServiceAnnotations: Contour's Service annotations through
// the file provider into the real Envoy. A Service annotated
// projectcontour.io/upstream-protocol.tls reaches a TLS-only upstream
// (which the same upstream behind an unannotated Service, spoken to in
// plaintext, does not answer); one annotated upstream-protocol.h2c reaches
// its upstream over HTTP/2 with prior knowledge (an unannotated one over
// HTTP/1.1); and Contour's upstream TLS example (docs/config/
// upstream-tls.md, names adapted: the annotation on the Service, the
// validation on the HTTPProxy) is served, checking the certificate.
func TestHTTPProxyServiceAnnotations(t *testing.T) {
	ca := harness.NewCA(t, "upstream-ca")
	secure := startTLSEcho(t, "secure-backend", ca.Issue(t, "backend.example.com"))
	plain := harness.StartEcho(t, "plain")
	dir := t.TempDir()
	httpAddr, _, _ := harness.StartEnvoyAndControlPlane(t, "--provider", "file", "-f", dir)

	all := []client.Object{ca.Secret("default", "my-certificate-authority")}
	all = append(all, annotatedService("secure-backend", 8443, secure.Port, map[string]string{"projectcontour.io/upstream-protocol.tls": "8443"})...)
	all = append(all, annotatedService("secure-unannotated", 8443, secure.Port, nil)...)
	all = append(all, annotatedService("h2c-backend", 80, plain.Port, map[string]string{"projectcontour.io/upstream-protocol.h2c": "main"})...)
	all = append(all, annotatedService("http1-backend", 80, plain.Port, nil)...)
	// The circuit breakers, before a peer that answers in seconds: each
	// Service has a slow peer of its own in front of the echo.
	slowLimited, slowOpen := harness.StartSlowPeer(t, plain.Addr), harness.StartSlowPeer(t, plain.Addr)
	for _, p := range []*harness.SlowPeer{slowLimited, slowOpen} {
		p.SetFault(harness.Fault{Delay: 3 * time.Second})
	}
	all = append(all, annotatedService("slow-limited", 80, harness.Port(t, slowLimited.Addr), map[string]string{
		"projectcontour.io/max-connections": "1", "projectcontour.io/max-pending-requests": "1", "projectcontour.io/max-requests": "1"})...)
	all = append(all, annotatedService("slow-open", 80, harness.Port(t, slowOpen.Addr), nil)...)
	route := func(prefix, svc string, port int) contourv1.Route {
		return contourv1.Route{
			Conditions: []contourv1.MatchCondition{{Prefix: prefix}},
			Services:   []contourv1.Service{{Name: svc, Port: port}},
		}
	}
	all = append(all,
		&contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "annotated"}, Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{Fqdn: "annotated.example.com"},
			Routes: []contourv1.Route{
				route("/tls", "secure-backend", 8443),
				route("/unannotated-tls", "secure-unannotated", 8443),
				route("/h2c", "h2c-backend", 80),
				route("/http1", "http1-backend", 80),
				route("/slow-limited", "slow-limited", 80),
				route("/slow-open", "slow-open", 80),
			},
		}},
		// Contour's example, as its documentation has it.
		&contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "example"}, Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{Fqdn: "www.example.com"},
			Routes: []contourv1.Route{{Services: []contourv1.Service{{
				Name: "secure-backend",
				Port: 8443,
				UpstreamValidation: &contourv1.UpstreamValidation{
					CACertificate: "my-certificate-authority",
					SubjectName:   "backend.example.com",
				},
			}}}},
		}},
	)
	if err := harness.Dir(dir).Apply(context.Background(), all...); err != nil {
		t.Fatal(err)
	}
	c := harness.HTTPClient(httpAddr)

	t.Run("upstream-protocol.tls", func(t *testing.T) {
		got := harness.EventuallyEcho(t, c, harness.MustRequest(t, "http://annotated.example.com/tls"), http.StatusOK)
		if got.Name != "secure-backend" {
			t.Fatalf("answered by %q, want secure-backend", got.Name)
		}
		// The upstream answers TLS only: without the annotation, the
		// plaintext request gets no answer from it.
		resp := doRequest(t, c, harness.MustRequest(t, "http://annotated.example.com/unannotated-tls"))
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode == http.StatusOK {
			t.Fatalf("plaintext to the TLS upstream answered 200 (%s): the check above proves nothing", body)
		}
	})
	t.Run("contour upstream TLS example", func(t *testing.T) {
		got := harness.EventuallyEcho(t, c, harness.MustRequest(t, "http://www.example.com/"), http.StatusOK)
		if got.Name != "secure-backend" {
			t.Fatalf("answered by %q, want secure-backend", got.Name)
		}
	})
	t.Run("upstream-protocol.h2c", func(t *testing.T) {
		got := harness.EventuallyEcho(t, c, harness.MustRequest(t, "http://annotated.example.com/h2c"), http.StatusOK)
		if got.Proto != "HTTP/2.0" {
			t.Errorf("the annotated upstream got %s, want HTTP/2.0", got.Proto)
		}
		got = harness.EventuallyEcho(t, c, harness.MustRequest(t, "http://annotated.example.com/http1"), http.StatusOK)
		if got.Proto != "HTTP/1.1" {
			t.Errorf("the unannotated upstream got %s, want HTTP/1.1", got.Proto)
		}
	})
	// Five requests at once to a peer that answers in 3 s: with at most
	// one connection, one request and one pending, Envoy answers the
	// overflow at once with 503 (x-envoy-overloaded) and serves the rest;
	// without the annotations every one is served, late.
	burst := func(t *testing.T, path string) (ok, overloaded int) {
		t.Helper()
		harness.EventuallyEcho(t, c, harness.MustRequest(t, "http://annotated.example.com"+path), http.StatusOK)
		var mu sync.Mutex
		var wg sync.WaitGroup
		for range 5 {
			wg.Go(func() {
				resp := doRequest(t, c, harness.MustRequest(t, "http://annotated.example.com"+path))
				_, _ = io.Copy(io.Discard, resp.Body)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case resp.StatusCode == http.StatusOK:
					ok++
				case resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("x-envoy-overloaded") == "true":
					overloaded++
				}
			})
		}
		wg.Wait()
		t.Logf("%s: %d served, %d overloaded of 5", path, ok, overloaded)
		return ok, overloaded
	}
	t.Run("circuit breakers before a slow peer", func(t *testing.T) {
		if ok, over := burst(t, "/slow-limited"); ok == 0 || over == 0 || ok+over != 5 {
			t.Errorf("annotated: %d served, %d overloaded of 5; want both (at most 1 request and 1 pending)", ok, over)
		}
		if ok, over := burst(t, "/slow-open"); ok != 5 || over != 0 {
			t.Errorf("unannotated: %d served, %d overloaded of 5; want all served", ok, over)
		}
	})
}
