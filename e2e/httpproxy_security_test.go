package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
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

// TestHTTPProxyCORS: a virtual host's corsPolicy through the file provider
// into the real Envoy: preflights from allowed origins (exact, ignoring
// case, and regex) are answered by Envoy with the policy's headers, other
// origins get none; a request from an allowed origin reaches the upstream
// and its response carries the access-control headers; "*" allows any
// origin; a host without a policy is left alone.
func TestHTTPProxyCORS(t *testing.T) {
	echo := harness.StartEcho(t, "echo")
	dir := t.TempDir()
	httpAddr, _, _ := harness.StartEnvoyAndControlPlane(t, "--provider", "file", "-f", dir)
	svc := []contourv1.Service{{Name: "echo", Port: 80}}
	var all []client.Object
	all = append(all, harness.LoopbackEndpointSlice("default", "echo", 80, echo.Port)...)
	all = append(all,
		&contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "cors"}, Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{Fqdn: "cors.example.com", CORSPolicy: &contourv1.CORSPolicy{
				AllowOrigin:      []string{"https://app.example.com", `https://[a-z]+\.example\.org`},
				AllowMethods:     []contourv1.CORSHeaderValue{"GET", "PUT"},
				AllowHeaders:     []contourv1.CORSHeaderValue{"authorization", "x-custom"},
				ExposeHeaders:    []contourv1.CORSHeaderValue{"x-total"},
				MaxAge:           "10m",
				AllowCredentials: true,
			}},
			Routes: []contourv1.Route{{Services: svc}},
		}},
		&contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "any"}, Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{Fqdn: "any.example.com", CORSPolicy: &contourv1.CORSPolicy{
				AllowOrigin: []string{"*"}, AllowMethods: []contourv1.CORSHeaderValue{"GET"},
			}},
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
	c := harness.HTTPClient(httpAddr)
	harness.EventuallyEcho(t, c, harness.MustRequest(t, "http://cors.example.com/"), http.StatusOK)
	harness.EventuallyEcho(t, c, harness.MustRequest(t, "http://plain.example.com/"), http.StatusOK)
	harness.EventuallyEcho(t, c, harness.MustRequest(t, "http://any.example.com/"), http.StatusOK)

	preflight := func(url, origin string) *http.Request {
		r, err := http.NewRequest(http.MethodOptions, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		r.Header.Set("Origin", origin)
		r.Header.Set("Access-Control-Request-Method", "PUT")
		r.Header.Set("Access-Control-Request-Headers", "x-custom")
		return r
	}
	for _, tc := range []struct {
		name, url, origin string
		want              map[string]string // "" for absent
		upstream          bool              // the preflight reached the upstream
	}{
		{"an exact origin, ignoring case", "http://cors.example.com/x", "https://APP.example.com", map[string]string{
			"Access-Control-Allow-Origin":      "https://APP.example.com",
			"Access-Control-Allow-Methods":     "GET,PUT",
			"Access-Control-Allow-Headers":     "authorization,x-custom",
			"Access-Control-Max-Age":           "600",
			"Access-Control-Allow-Credentials": "true",
		}, false},
		{"a regex origin", "http://cors.example.com/x", "https://team.example.org", map[string]string{
			"Access-Control-Allow-Origin": "https://team.example.org",
		}, false},
		{"a regex origin matches the whole origin", "http://cors.example.com/x", "https://team.example.org.evil.test", map[string]string{
			"Access-Control-Allow-Origin": "", "Access-Control-Allow-Methods": "",
		}, true},
		{"another origin gets no CORS headers", "http://cors.example.com/x", "https://evil.test", map[string]string{
			"Access-Control-Allow-Origin": "", "Access-Control-Allow-Methods": "",
		}, true},
		{"* allows any origin", "http://any.example.com/x", "https://whoever.test", map[string]string{
			"Access-Control-Allow-Origin": "https://whoever.test", "Access-Control-Allow-Methods": "GET", "Access-Control-Allow-Credentials": "",
		}, false},
		{"a host without a policy", "http://plain.example.com/x", "https://app.example.com", map[string]string{
			"Access-Control-Allow-Origin": "",
		}, true},
	} {
		t.Run("preflight: "+tc.name, func(t *testing.T) {
			before := echo.Requests()
			resp := doRequest(t, c, preflight(tc.url, tc.origin))
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d, want 200", resp.StatusCode)
			}
			if err := harness.WantHeaders(resp.Header, tc.want); err != nil {
				t.Error(err)
			}
			if reached := echo.Requests() > before; reached != tc.upstream {
				t.Errorf("preflight reached the upstream: %v, want %v", reached, tc.upstream)
			}
		})
	}
	t.Run("a request from an allowed origin has the access-control headers", func(t *testing.T) {
		r := harness.MustRequest(t, "http://cors.example.com/data")
		r.Header.Set("Origin", "https://app.example.com")
		resp := doRequest(t, c, r)
		body, _ := io.ReadAll(resp.Body)
		if _, err := harness.DecodeEcho(body); resp.StatusCode != http.StatusOK || err != nil {
			t.Fatalf("status %d (%v): %s", resp.StatusCode, err, body)
		}
		if err := harness.WantHeaders(resp.Header, map[string]string{
			"Access-Control-Allow-Origin":      "https://app.example.com",
			"Access-Control-Expose-Headers":    "x-total",
			"Access-Control-Allow-Credentials": "true",
		}); err != nil {
			t.Error(err)
		}
	})
}

// TestHTTPProxyLocalRateLimits: rateLimitPolicy.local through the file
// provider into the real Envoy, counting the answers: a virtual host's
// limit is one bucket for its routes without their own (its status and
// headers on the limited answers), a route's limit is a bucket of its own,
// two hosts with the same limit (the host's, or the same routes') have a
// bucket each, and a host without a limit is not limited. The buckets refill by the hour: none refills
// during the test.
func TestHTTPProxyLocalRateLimits(t *testing.T) {
	echo := harness.StartEcho(t, "echo")
	dir := t.TempDir()
	httpAddr, _, _ := harness.StartEnvoyAndControlPlane(t, "--provider", "file", "-f", dir)
	svc := []contourv1.Service{{Name: "echo", Port: 80}}
	hostLimit := &contourv1.RateLimitPolicy{Local: &contourv1.LocalRateLimitPolicy{
		Requests: 3, Burst: 1, Unit: "hour", ResponseStatusCode: 503,
		ResponseHeadersToAdd: []contourv1.HeaderValue{{Name: "x-limited", Value: "host 100%"}},
	}}
	limited := func(name string) *contourv1.HTTPProxy {
		return &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{Fqdn: name + ".example.com", RateLimitPolicy: hostLimit},
			Routes: []contourv1.Route{
				{Services: svc},
				{Conditions: []contourv1.MatchCondition{{Prefix: "/b"}}, Services: svc},
				{
					Conditions:      []contourv1.MatchCondition{{Prefix: "/own"}},
					RateLimitPolicy: &contourv1.RateLimitPolicy{Local: &contourv1.LocalRateLimitPolicy{Requests: 2, Unit: "hour"}},
					Services:        svc,
				},
			},
		}}
	}
	// routeLimited has only a route's limit: two such hosts have the same
	// routes, yet a bucket each.
	routeLimited := func(name string) *contourv1.HTTPProxy {
		return &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{Fqdn: name + ".example.com"},
			Routes: []contourv1.Route{{
				RateLimitPolicy: &contourv1.RateLimitPolicy{Local: &contourv1.LocalRateLimitPolicy{Requests: 2, Unit: "hour"}},
				Services:        svc,
			}},
		}}
	}
	var all []client.Object
	all = append(all, harness.LoopbackEndpointSlice("default", "echo", 80, echo.Port)...)
	all = append(all, limited("limited"), limited("twin"), routeLimited("solo-a"), routeLimited("solo-b"),
		&contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "plain"}, Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{Fqdn: "plain.example.com"},
			Routes:      []contourv1.Route{{Services: svc}},
		}},
	)
	if err := harness.Dir(dir).Apply(context.Background(), all...); err != nil {
		t.Fatal(err)
	}
	c := harness.HTTPClient(httpAddr)
	// Served: each of these spends its first token.
	harness.EventuallyEcho(t, c, harness.MustRequest(t, "http://limited.example.com/"), http.StatusOK)
	harness.EventuallyEcho(t, c, harness.MustRequest(t, "http://twin.example.com/"), http.StatusOK)
	harness.EventuallyEcho(t, c, harness.MustRequest(t, "http://plain.example.com/"), http.StatusOK)
	harness.EventuallyEcho(t, c, harness.MustRequest(t, "http://solo-a.example.com/"), http.StatusOK)
	harness.EventuallyEcho(t, c, harness.MustRequest(t, "http://solo-b.example.com/"), http.StatusOK)

	// statuses sends n requests to url and counts their answers by status.
	statuses := func(url string, n int) map[int]int {
		got := map[int]int{}
		for range n {
			resp := doRequest(t, c, harness.MustRequest(t, url))
			_, _ = io.Copy(io.Discard, resp.Body) // only the status and headers count
			got[resp.StatusCode]++
			if resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("x-limited") != "host 100%" {
				t.Errorf("%s: a limited answer without the host's header: %v", url, resp.Header)
			}
		}
		return got
	}
	check := func(name string, got, want map[int]int) {
		t.Helper()
		for code, n := range want {
			if got[code] != n {
				t.Errorf("%s: answers %v, want %v", name, got, want)
				return
			}
		}
	}
	// The host's bucket holds requests+burst = 4: one spent above, two on
	// "/b", one more on "/", then every request of those routes is
	// limited, with the host's status and header.
	check("the host's routes share its bucket", statuses("http://limited.example.com/b", 2), map[int]int{200: 2})
	check("the host's routes share its bucket", statuses("http://limited.example.com/", 3), map[int]int{200: 1, 503: 2})
	check("the host's bucket is empty", statuses("http://limited.example.com/b", 2), map[int]int{503: 2})
	// A route with its own limit has its own bucket of 2, and Envoy's
	// default 429.
	check("a route's own bucket", statuses("http://limited.example.com/own", 4), map[int]int{200: 2, 429: 2})
	// The twin host, with the same limit, was not merged with the first:
	// three tokens left.
	check("another host's bucket", statuses("http://twin.example.com/", 4), map[int]int{200: 3, 503: 1})
	check("a host without a limit", statuses("http://plain.example.com/", 10), map[int]int{200: 10})
	// Two hosts with the same routes and route limits were not merged
	// into one virtual host: one token left each.
	check("a route's bucket on one host", statuses("http://solo-a.example.com/", 2), map[int]int{200: 1, 429: 1})
	check("the same route's bucket on another host", statuses("http://solo-b.example.com/", 2), map[int]int{200: 1, 429: 1})
}

// TestHTTPProxySecurityExample runs examples/httpproxy-security as its
// README says (file provider, the folder on its own: it links the
// quickstart's certificate and upstream), on free ports: the allow list, the route's deny list, a CORS preflight
// and the /login rate limit.
func TestHTTPProxySecurityExample(t *testing.T) {
	repo := harness.RepoRoot(t)
	echo := harness.StartEcho(t, "echo")
	dir := t.TempDir()
	port := strings.NewReplacer("port: 19000", fmt.Sprintf("port: %d", echo.Port))
	for _, f := range []string{"httpproxy-security/tls-secret.yaml", "httpproxy-security/upstreams.yaml", "httpproxy-security/httpproxy.yaml"} {
		b, err := os.ReadFile(filepath.Join(repo, "examples", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, strings.ReplaceAll(f, "/", "-")), []byte(port.Replace(string(b))), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	_, httpsAddr, _ := harness.StartEnvoyAndControlPlane(t, "--provider", "file", "-f", dir)
	caPEM, err := os.ReadFile(filepath.Join(repo, "examples/quickstart/ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	from := func(ip string) *http.Client { return harness.HTTPSClientFrom(caPEM, httpsAddr, ip) }
	harness.EventuallyEcho(t, from("127.0.0.1"), harness.MustRequest(t, "https://echo.example.com/"), http.StatusOK)

	for _, tc := range []struct {
		from, path string
		want       int
	}{
		{"127.0.0.2", "/", http.StatusForbidden},
		{"127.0.0.2", "/partners", http.StatusOK},
		{"127.0.0.3", "/partners", http.StatusForbidden},
	} {
		if code, err := harness.StatusCode(from(tc.from), "https://echo.example.com"+tc.path); err != nil || code != tc.want {
			t.Errorf("%s from %s: status %d (%v), want %d", tc.path, tc.from, code, err, tc.want)
		}
	}

	r, err := http.NewRequest(http.MethodOptions, "https://echo.example.com/api", nil)
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Origin", "https://pr-12.preview.example.com")
	r.Header.Set("Access-Control-Request-Method", "POST")
	resp := doRequest(t, from("127.0.0.1"), r)
	if err := harness.WantHeaders(resp.Header, map[string]string{
		"Access-Control-Allow-Origin": "https://pr-12.preview.example.com", "Access-Control-Allow-Methods": "GET,POST", "Access-Control-Max-Age": "600",
	}); resp.StatusCode != http.StatusOK || err != nil {
		t.Errorf("preflight: status %d, %v", resp.StatusCode, err)
	}

	var codes []int
	for range 4 {
		resp := doRequest(t, from("127.0.0.1"), harness.MustRequest(t, "https://echo.example.com/login"))
		codes = append(codes, resp.StatusCode)
		if resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") != "60" {
			t.Errorf("429 without the policy's retry-after: %v", resp.Header)
		}
	}
	if fmt.Sprint(codes) != "[200 200 200 429]" {
		t.Errorf("/login answers %v, want three 200s, then 429", codes)
	}
}
