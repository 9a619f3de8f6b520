package e2e

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/e2e/harness"
)

// TestHTTPProxyIPFilters: ipAllowPolicy and ipDenyPolicy, through the file
// provider into the real Envoy, from three client addresses (127.0.0.1,
// .2 and .3, all the loopback's): the virtual host's list applies to its
// routes and the included ones, a route's own replaces it, a Remote rule
// is not fooled by a client's X-Forwarded-For, and another host on the
// same listener is not filtered.
func TestHTTPProxyIPFilters(t *testing.T) {
	echo := harness.StartEcho(t, "echo")
	dir := t.TempDir()
	httpAddr, _, _ := harness.StartEnvoyAndControlPlane(t, "--provider", "file", "-f", dir)
	svc := []contourv1.Service{{Name: "echo", Port: 80}}
	peer := func(cidr string) []contourv1.IPFilterPolicy {
		return []contourv1.IPFilterPolicy{{Source: contourv1.IPFilterSourcePeer, CIDR: cidr}}
	}
	var all []client.Object
	all = append(all, harness.LoopbackEndpointSlice("default", "echo", 80, echo.Port)...)
	all = append(all,
		&contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "filtered"}, Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{Fqdn: "ip.example.com", IPAllowFilterPolicy: peer("127.0.0.1")},
			Routes: []contourv1.Route{
				{Services: svc},
				{Conditions: []contourv1.MatchCondition{{Prefix: "/open"}}, IPDenyFilterPolicy: peer("127.0.0.3/32"), Services: svc},
				{
					Conditions:          []contourv1.MatchCondition{{Prefix: "/remote"}},
					IPAllowFilterPolicy: []contourv1.IPFilterPolicy{{Source: contourv1.IPFilterSourceRemote, CIDR: "127.0.0.2"}},
					Services:            svc,
				},
			},
			Includes: []contourv1.Include{{Name: "team", Conditions: []contourv1.MatchCondition{{Prefix: "/team"}}}},
		}},
		&contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "team"}, Spec: contourv1.HTTPProxySpec{
			Routes: []contourv1.Route{{Services: svc}},
		}},
		&contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "plain"}, Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{Fqdn: "plain.example.com"},
			Routes:      []contourv1.Route{{Services: svc}},
		}},
	)
	if err := harness.Dir(dir).Apply(context.Background(), all...); err != nil {
		t.Fatal(err)
	}
	clients := map[string]*http.Client{}
	for _, ip := range []string{"127.0.0.1", "127.0.0.2", "127.0.0.3"} {
		clients[ip] = harness.HTTPClientFrom(httpAddr, ip)
	}
	harness.EventuallyEcho(t, clients["127.0.0.1"], harness.MustRequest(t, "http://ip.example.com/"), http.StatusOK)

	for _, tc := range []struct {
		name, from, url string
		want            int
		xff             string
	}{
		{"the host's allow list lets its address in", "127.0.0.1", "http://ip.example.com/", http.StatusOK, ""},
		{"the host's allow list keeps others out", "127.0.0.2", "http://ip.example.com/", http.StatusForbidden, ""},
		{"an included route has the host's list", "127.0.0.2", "http://ip.example.com/team/x", http.StatusForbidden, ""},
		{"an included route has the host's list (allowed)", "127.0.0.1", "http://ip.example.com/team/x", http.StatusOK, ""},
		{"a route's deny list replaces the host's allow list", "127.0.0.2", "http://ip.example.com/open", http.StatusOK, ""},
		{"a route's deny list keeps its address out", "127.0.0.3", "http://ip.example.com/open", http.StatusForbidden, ""},
		{"a route's deny list lets the host's address in", "127.0.0.1", "http://ip.example.com/open", http.StatusOK, ""},
		{"a Remote rule lets its address in", "127.0.0.2", "http://ip.example.com/remote", http.StatusOK, ""},
		{"a Remote rule keeps others out", "127.0.0.1", "http://ip.example.com/remote", http.StatusForbidden, ""},
		{"a Remote rule is not fooled by X-Forwarded-For", "127.0.0.1", "http://ip.example.com/remote", http.StatusForbidden, "127.0.0.2"},
		{"another host is not filtered", "127.0.0.3", "http://plain.example.com/", http.StatusOK, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := harness.MustRequest(t, tc.url)
			if tc.xff != "" {
				req.Header.Set("X-Forwarded-For", tc.xff)
			}
			resp := doRequest(t, clients[tc.from], req)
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.want {
				t.Fatalf("from %s: status %d (%s), want %d", tc.from, resp.StatusCode, body, tc.want)
			}
			if tc.want == http.StatusForbidden && !strings.Contains(string(body), "RBAC: access denied") {
				t.Errorf("403 body %q, want Envoy's RBAC denial", body)
			}
			if tc.want == http.StatusOK {
				if _, err := harness.DecodeEcho(body); err != nil {
					t.Errorf("not the upstream's answer: %v: %s", err, body)
				}
			}
		})
	}
}
