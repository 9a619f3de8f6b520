package e2e

import (
	"context"
	"net/http"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/e2e/harness"
)

// TestHTTPProxyWildcardFQDN: fqdn "*.example.com" through the file
// provider into the real Envoy, as Contour serves it: a.example.com (in
// any case) reaches the wildcard's upstream, an exact root of a covered
// name keeps its own, and neither b.c.example.com (two labels in the
// wildcard's place) nor example.com is served. Over TLS the wildcard is
// the SNI name of its filter chain: x.secure.test is served with the
// wildcard certificate; on plain HTTP its routes redirect to HTTPS, but
// only for the names it serves.
func TestHTTPProxyWildcardFQDN(t *testing.T) {
	wild, exact := harness.StartEcho(t, "wild"), harness.StartEcho(t, "exact")
	dir := t.TempDir()
	httpAddr, httpsAddr, _ := harness.StartEnvoyAndControlPlane(t, "--provider", "file", "-f", dir)
	ca := harness.NewCA(t, "wildcard-ca")
	svc := func(name string) []contourv1.Service { return []contourv1.Service{{Name: name, Port: 80}} }
	root := func(name, fqdn, upstream string, tls *contourv1.TLS) *contourv1.HTTPProxy {
		return &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{Fqdn: fqdn, TLS: tls},
			Routes:      []contourv1.Route{{Services: svc(upstream)}},
		}}
	}
	all := []client.Object{
		ca.Issue(t, "*.secure.test").Secret("default", "wildcard-cert"),
		root("wild", "*.example.com", "wild", nil),
		root("exact", "exact.example.com", "exact", nil),
		root("secure", "*.secure.test", "wild", &contourv1.TLS{SecretName: "wildcard-cert"}),
	}
	all = append(all, harness.LoopbackEndpointSlice("default", "wild", 80, wild.Port)...)
	all = append(all, harness.LoopbackEndpointSlice("default", "exact", 80, exact.Port)...)
	if err := harness.Dir(dir).Apply(context.Background(), all...); err != nil {
		t.Fatal(err)
	}
	c := harness.HTTPClient(httpAddr)
	harness.EventuallyEcho(t, c, harness.MustRequest(t, "http://a.example.com/"), http.StatusOK)
	harness.EventuallyEcho(t, harness.HTTPSClient(ca.CertPEM, httpsAddr), harness.MustRequest(t, "https://x.secure.test/"), http.StatusOK)

	for _, tc := range []struct {
		host     string
		want     int
		upstream string
	}{
		{"a.example.com", http.StatusOK, "wild"},
		{"Other-1.EXAMPLE.com", http.StatusOK, "wild"},
		{"exact.example.com", http.StatusOK, "exact"},
		{"b.c.example.com", http.StatusNotFound, ""},
		{"example.com", http.StatusNotFound, ""},
		{"x.secure.test", http.StatusMovedPermanently, ""},
		{"y.x.secure.test", http.StatusNotFound, ""},
	} {
		t.Run(tc.host, func(t *testing.T) {
			r := harness.MustRequest(t, "http://"+tc.host+"/path")
			resp := doRequest(t, c, r)
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.want)
			}
			if tc.upstream == "" {
				return
			}
			got, err := harness.GetEcho(c, r, tc.want)
			if err != nil {
				t.Fatal(err)
			}
			if got.Name != tc.upstream {
				t.Errorf("reached %s, want %s", got.Name, tc.upstream)
			}
		})
	}
}
