package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/e2e/harness"
)

// TestHTTPProxyMatchingAndRouting: the HTTPProxy match conditions (regex
// paths, query parameters, header regex/ignoreCase/treatMissingAsEmpty)
// and answers (redirects, direct responses, prefix rewrites), through the
// file provider into the real Envoy: what each request reaches.
func TestHTTPProxyMatchingAndRouting(t *testing.T) {
	echo := harness.StartEcho(t, "echo")
	other := harness.StartEcho(t, "other")
	dir := t.TempDir()
	httpAddr, _, _ := harness.StartEnvoyAndControlPlane(t, "--provider", "file", "-f", dir)
	objs := harness.Dir(dir)
	svc := func(name string) []contourv1.Service { return []contourv1.Service{{Name: name, Port: 80}} }
	var all []client.Object
	all = append(all, harness.LoopbackEndpointSlice("default", "echo", 80, echo.Port)...)
	all = append(all, harness.LoopbackEndpointSlice("default", "other", 80, other.Port)...)
	s := func(v string) *string { return &v }
	code := func(c contourv1.RedirectResponseCode) *contourv1.RedirectResponseCode { return &c }
	all = append(all,
		&contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "routes"}, Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{Fqdn: "routes.example.com"},
			Routes: []contourv1.Route{
				{Conditions: []contourv1.MatchCondition{{Regex: `/v[0-9]+/items`}}, Services: svc("other")},
				{Conditions: []contourv1.MatchCondition{{Prefix: "/q"}, {QueryParameter: &contourv1.QueryParameterMatchCondition{Name: "mode", Exact: "Beta", IgnoreCase: true}}}, Services: svc("other")},
				{Conditions: []contourv1.MatchCondition{{Prefix: "/h"}, {Header: &contourv1.HeaderMatchCondition{Name: "x-team", Exact: "blue", IgnoreCase: true}}}, Services: svc("other")},
				{Conditions: []contourv1.MatchCondition{{Prefix: "/tier"}, {Header: &contourv1.HeaderMatchCondition{Name: "x-tier", NotExact: "free", TreatMissingAsEmpty: true}}}, Services: svc("other")},
				{Conditions: []contourv1.MatchCondition{{Prefix: "/old"}}, RequestRedirectPolicy: &contourv1.HTTPRequestRedirectPolicy{Hostname: s("new.example.com"), StatusCode: code(301), Prefix: s("/new")}},
				{Conditions: []contourv1.MatchCondition{{Prefix: "/down"}}, DirectResponsePolicy: &contourv1.HTTPDirectResponsePolicy{StatusCode: 503, Body: "maintenance"}},
				{Conditions: []contourv1.MatchCondition{{Prefix: "/api"}}, PathRewritePolicy: &contourv1.PathRewritePolicy{ReplacePrefix: []contourv1.ReplacePrefix{{Replacement: "/"}}}, Services: svc("other")},
				{Services: svc("echo")},
			},
			Includes: []contourv1.Include{{Name: "team", Conditions: []contourv1.MatchCondition{{Prefix: "/team"}}}},
		}},
		&contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "team"}, Spec: contourv1.HTTPProxySpec{
			Routes: []contourv1.Route{
				{Conditions: []contourv1.MatchCondition{{Regex: `/(a|b)/.*`}}, Services: svc("other")},
				{
					Conditions:        []contourv1.MatchCondition{{Prefix: "/rw"}},
					PathRewritePolicy: &contourv1.PathRewritePolicy{ReplacePrefix: []contourv1.ReplacePrefix{{Prefix: "/other", Replacement: "/no"}, {Prefix: "/team/rw", Replacement: "/t"}}},
					Services:          svc("other"),
				},
			},
		}},
	)
	if err := objs.Apply(context.Background(), all...); err != nil {
		t.Fatal(err)
	}
	c := harness.HTTPClient(httpAddr)
	harness.EventuallyEcho(t, c, harness.MustRequest(t, "http://routes.example.com/"), http.StatusOK)

	req := func(path string, headers ...string) *http.Request {
		r := harness.MustRequest(t, "http://routes.example.com"+path)
		for i := 0; i+1 < len(headers); i += 2 {
			r.Header.Set(headers[i], headers[i+1])
		}
		return r
	}
	for _, tc := range []struct {
		name     string
		req      *http.Request
		upstream string // echo or other
		path     string // the path the upstream got ("" for the request's)
	}{
		{"regex path matches the whole path", req("/v2/items"), "other", ""},
		{"regex path: not a prefix", req("/v2/items/x"), "echo", ""},
		{"query parameter, ignoring case", req("/q?mode=BETA"), "other", ""},
		{"query parameter: other value", req("/q?mode=alpha"), "echo", ""},
		{"query parameter: absent", req("/q"), "echo", ""},
		{"header exact, ignoring case", req("/h", "x-team", "BLUE"), "other", ""},
		{"header exact: other value", req("/h", "x-team", "red"), "echo", ""},
		{"treatMissingAsEmpty: an absent header is not free", req("/tier"), "other", ""},
		{"treatMissingAsEmpty: free", req("/tier", "x-tier", "free"), "echo", ""},
		{"replacePrefix / on segments", req("/api/users?x=1"), "other", "/users"},
		{"replacePrefix / of the prefix itself", req("/api"), "other", "/"},
		{"regex under an include prefix", req("/team/a/x"), "other", ""},
		{"replacePrefix: the entry for the prefix the include chain renders", req("/team/rw/x"), "other", "/t/x"},
		{"regex under an include prefix: no match", req("/team/c/x"), "echo", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := harness.GetEcho(c, tc.req, http.StatusOK)
			if err != nil {
				t.Fatal(err)
			}
			want := tc.path
			if want == "" {
				want = tc.req.URL.Path
			}
			if got.Name != tc.upstream || got.Path != want {
				t.Errorf("reached %s with %s, want %s with %s", got.Name, got.Path, tc.upstream, want)
			}
			if tc.req.URL.RawQuery != "" && got.Query != tc.req.URL.RawQuery {
				t.Errorf("query %q, want %q kept", got.Query, tc.req.URL.RawQuery)
			}
		})
	}

	t.Run("redirect replaces the matched prefix and keeps the query", func(t *testing.T) {
		resp := doRequest(t, c, req("/old/page?x=1"))
		if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusMovedPermanently || loc != "http://new.example.com/new/page?x=1" {
			t.Errorf("status %d, Location %q; want 301 to http://new.example.com/new/page?x=1", resp.StatusCode, loc)
		}
	})
	t.Run("direct response", func(t *testing.T) {
		resp := doRequest(t, c, req("/down"))
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusServiceUnavailable || string(body) != "maintenance" {
			t.Errorf("status %d, body %q; want 503 maintenance", resp.StatusCode, body)
		}
	})
}

func doRequest(t *testing.T, c *http.Client, r *http.Request) *http.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	resp, err := c.Do(r.Clone(ctx))
	if err != nil {
		t.Fatal(fmt.Errorf("%s: %w", r.URL, err))
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// TestHTTPProxyIncludesWithoutConditions: a root including two children
// without conditions (one with none, one with prefix "/"), as Contour
// allows, through the file provider into the real Envoy: both children's
// routes are served on the root's host, and of the route both define on
// one path the later include's serves it, as in Contour.
func TestHTTPProxyIncludesWithoutConditions(t *testing.T) {
	echo := harness.StartEcho(t, "echo")
	other := harness.StartEcho(t, "other")
	dir := t.TempDir()
	httpAddr, _, _ := harness.StartEnvoyAndControlPlane(t, "--provider", "file", "-f", dir)
	svc := func(name string) []contourv1.Service { return []contourv1.Service{{Name: name, Port: 80}} }
	prefix := func(p string) []contourv1.MatchCondition { return []contourv1.MatchCondition{{Prefix: p}} }
	var all []client.Object
	all = append(all, harness.LoopbackEndpointSlice("default", "echo", 80, echo.Port)...)
	all = append(all, harness.LoopbackEndpointSlice("default", "other", 80, other.Port)...)
	all = append(all,
		&contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "root"}, Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{Fqdn: "merged.example.com"},
			Includes:    []contourv1.Include{{Name: "blog"}, {Name: "shop", Conditions: prefix("/")}},
		}},
		&contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "blog"}, Spec: contourv1.HTTPProxySpec{
			Routes: []contourv1.Route{{Conditions: prefix("/blog"), Services: svc("echo")}, {Conditions: prefix("/shared"), Services: svc("echo")}},
		}},
		&contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "shop"}, Spec: contourv1.HTTPProxySpec{
			Routes: []contourv1.Route{{Conditions: prefix("/shop"), Services: svc("other")}, {Conditions: prefix("/shared"), Services: svc("other")}},
		}},
	)
	if err := harness.Dir(dir).Apply(context.Background(), all...); err != nil {
		t.Fatal(err)
	}
	c := harness.HTTPClient(httpAddr)
	for path, want := range map[string]string{"/blog/post": "echo", "/shop/cart": "other", "/shared": "other"} {
		if got := harness.EventuallyEcho(t, c, harness.MustRequest(t, "http://merged.example.com"+path), http.StatusOK); got.Name != want {
			t.Errorf("%s: served by %s, want %s", path, got.Name, want)
		}
	}
	resp, err := c.Do(harness.MustRequest(t, "http://merged.example.com/elsewhere"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("/elsewhere: status %d, want 404", resp.StatusCode)
	}
}
