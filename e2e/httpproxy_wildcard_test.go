package e2e

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
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
// only for the names it serves. Exact TLS roots under it show the HTTP
// listener's redirects: a host without a permitInsecure route redirects
// every path, one no route matches too (a 404 over HTTPS, where Contour
// answers 404 on HTTP); a host with one serves it over HTTP, redirects
// its other routes and answers 404 to a path no route matches.
func TestHTTPProxyWildcardFQDN(t *testing.T) {
	wild, exact := harness.StartEcho(t, "wild"), harness.StartEcho(t, "exact")
	dir := t.TempDir()
	httpAddr, httpsAddr, _ := harness.StartEnvoyAndControlPlane(t, "--provider", "file", "-f", dir)
	ca := harness.NewCA(t, "wildcard-ca")
	svc := func(name string) []contourv1.Service { return []contourv1.Service{{Name: name, Port: 80}} }
	prefix := func(p string) []contourv1.MatchCondition { return []contourv1.MatchCondition{{Prefix: p}} }
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
		&contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "routed"}, Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{Fqdn: "routed.secure.test", TLS: &contourv1.TLS{SecretName: "wildcard-cert"}},
			Routes:      []contourv1.Route{{Conditions: prefix("/app"), Services: svc("exact")}},
		}},
		&contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "insecure"}, Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{Fqdn: "insecure.secure.test", TLS: &contourv1.TLS{SecretName: "wildcard-cert"}},
			Routes: []contourv1.Route{
				{Conditions: prefix("/open"), PermitInsecure: true, Services: svc("exact")},
				{Conditions: prefix("/app"), Services: svc("exact")},
			},
		}},
	}
	all = append(all, harness.LoopbackEndpointSlice("default", "wild", 80, wild.Port)...)
	all = append(all, harness.LoopbackEndpointSlice("default", "exact", 80, exact.Port)...)
	if err := harness.Dir(dir).Apply(context.Background(), all...); err != nil {
		t.Fatal(err)
	}
	c := harness.HTTPClient(httpAddr)
	https := harness.HTTPSClient(ca.CertPEM, httpsAddr)
	harness.EventuallyEcho(t, c, harness.MustRequest(t, "http://a.example.com/"), http.StatusOK)
	harness.EventuallyEcho(t, https, harness.MustRequest(t, "https://x.secure.test/"), http.StatusOK)
	harness.EventuallyEcho(t, https, harness.MustRequest(t, "https://routed.secure.test/app"), http.StatusOK)
	harness.EventuallyEcho(t, c, harness.MustRequest(t, "http://insecure.secure.test/open"), http.StatusOK)

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

	t.Run("TLS hosts on plain HTTP", func(t *testing.T) {
		httpsPort := httpsAddr[strings.LastIndex(httpsAddr, ":")+1:]
		for _, tc := range []struct {
			url      string
			want     int
			upstream string
		}{
			{"http://x.secure.test/path", http.StatusMovedPermanently, ""},
			{"http://routed.secure.test/app/x", http.StatusMovedPermanently, ""},
			{"http://routed.secure.test/unrouted?q=1", http.StatusMovedPermanently, ""},
			{"http://insecure.secure.test/open/x", http.StatusOK, "exact"},
			{"http://insecure.secure.test/app", http.StatusMovedPermanently, ""},
			{"http://insecure.secure.test/unrouted", http.StatusNotFound, ""},
		} {
			resp := doRequest(t, c, harness.MustRequest(t, tc.url))
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.want {
				t.Errorf("%s: status %d (%s), want %d", tc.url, resp.StatusCode, body, tc.want)
				continue
			}
			if tc.want == http.StatusMovedPermanently {
				u, _ := url.Parse(tc.url)
				want := "https://" + u.Hostname() + ":" + httpsPort + u.RequestURI()
				if got := resp.Header.Get("Location"); got != want {
					t.Errorf("%s: Location %q, want %q", tc.url, got, want)
				}
			}
			if tc.upstream != "" {
				if got, err := harness.DecodeEcho(body); err != nil || got.Name != tc.upstream {
					t.Errorf("%s: answered by %+v (%v), want %s", tc.url, got, err, tc.upstream)
				}
			}
		}
		// Where the redirect of a path no route matches leads.
		if code, err := harness.StatusCode(https, "https://routed.secure.test/unrouted?q=1"); err != nil || code != http.StatusNotFound {
			t.Errorf("https://routed.secure.test/unrouted: %d (%v), want 404", code, err)
		}
	})
}
