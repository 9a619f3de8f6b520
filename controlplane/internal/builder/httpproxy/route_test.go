package httpproxy

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// On the HTTP listener, a TLS host whose routes would all be plain HTTPS
// redirects has one redirect of every path (its :authority condition
// kept for a wildcard host); a permitInsecure route, or a route's own IP
// filter or rate limit, keeps one redirect per route, in the routes'
// order, with the route's whole match.
func TestInsecureRoutes(t *testing.T) {
	a := ir.Origins{{Kind: objects.KindHTTPProxy, Namespace: "default", Name: "a"}}
	b := ir.Origins{{Kind: objects.KindHTTPProxy, Namespace: "default", Name: "b"}}
	header := []ir.HeaderMatch{{Name: "x-a", Kind: "exact", Value: "1"}}
	served := func(kind ir.PathMatchKind, path string) ir.Route {
		return ir.Route{PathKind: kind, Path: path, Clusters: []ir.WeightedCluster{{Cluster: "default/echo/80"}}, Origins: a}
	}
	withHeaders := func(r ir.Route, h []ir.HeaderMatch) ir.Route { r.Headers = h; return r }
	redirect := func(kind ir.PathMatchKind, path string, h []ir.HeaderMatch) *ir.Route {
		return &ir.Route{PathKind: kind, Path: path, Headers: h, HTTPSRedirect: true, AuthDisabled: true, Origins: a}
	}
	filter := &ir.IPFilter{Allow: true, Rules: []ir.IPRule{{CIDR: "10.0.0.0/8"}}}
	limit := &ir.LocalRateLimit{Requests: 1, Interval: 1e9}
	wildcard := []ir.HeaderMatch{WildcardAuthority("*.example.com")}

	tests := []struct {
		name   string
		fqdn   string
		routes []Route
		want   []*ir.Route
	}{{
		name: "plain TLS host: one redirect of every path",
		fqdn: "a.example.com",
		routes: []Route{
			{Route: served(ir.PathPrefix, "/a")},
			{Route: withHeaders(served(ir.PathExact, "/b"), header)},
			{Route: ir.Route{PathKind: ir.PathPrefix, Path: "/c", Origins: b}},
		},
		want: []*ir.Route{{PathKind: ir.PathPrefix, HTTPSRedirect: true, AuthDisabled: true, Origins: append(a, b...)}},
	}, {
		name:   "wildcard host: one redirect with the :authority condition",
		fqdn:   "*.example.com",
		routes: []Route{{Route: withHeaders(served(ir.PathPrefix, "/a"), wildcard)}},
		want:   []*ir.Route{{PathKind: ir.PathPrefix, Headers: wildcard, HTTPSRedirect: true, AuthDisabled: true, Origins: a}},
	}, {
		name:   "no routes: no redirect",
		fqdn:   "a.example.com",
		routes: nil,
		want:   []*ir.Route{},
	}, {
		name: "a permitInsecure route: served, the others redirected one by one, exact first",
		fqdn: "a.example.com",
		routes: []Route{
			{Route: served(ir.PathPrefix, "/")},
			{Route: served(ir.PathPrefix, "/open"), permitInsecure: true},
			{Route: withHeaders(served(ir.PathExact, "/b"), header)},
		},
		want: []*ir.Route{
			redirect(ir.PathExact, "/b", header),
			core.PtrTo(served(ir.PathPrefix, "/open")),
			redirect(ir.PathPrefix, "/", nil),
		},
	}, {
		name: "wildcard host with a permitInsecure route: each redirect keeps the :authority condition",
		fqdn: "*.example.com",
		routes: []Route{
			{Route: withHeaders(served(ir.PathPrefix, "/a"), wildcard)},
			{Route: withHeaders(served(ir.PathPrefix, "/open"), wildcard), permitInsecure: true},
		},
		want: []*ir.Route{
			core.PtrTo(withHeaders(served(ir.PathPrefix, "/open"), wildcard)),
			redirect(ir.PathPrefix, "/a", wildcard),
		},
	}, {
		name: "a route's IP filter: redirects one by one, the filter kept",
		fqdn: "a.example.com",
		routes: []Route{
			{Route: served(ir.PathPrefix, "/a")},
			{Route: func() ir.Route { r := served(ir.PathPrefix, "/private"); r.IPFilter = filter; return r }()},
		},
		want: []*ir.Route{
			func() *ir.Route { r := redirect(ir.PathPrefix, "/private", nil); r.IPFilter = filter; return r }(),
			redirect(ir.PathPrefix, "/a", nil),
		},
	}, {
		name: "a route's rate limit: redirects one by one, the limit kept",
		fqdn: "a.example.com",
		routes: []Route{
			{Route: func() ir.Route { r := served(ir.PathPrefix, "/limited"); r.RateLimit = limit; return r }()},
			{Route: served(ir.PathPrefix, "/a")},
		},
		want: []*ir.Route{
			func() *ir.Route { r := redirect(ir.PathPrefix, "/limited", nil); r.RateLimit = limit; return r }(),
			redirect(ir.PathPrefix, "/a", nil),
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := InsecureRoutes(tc.fqdn, tc.routes, nil)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("routes:\n%s\nwant:\n%s", dumpRoutes(got), dumpRoutes(tc.want))
			}
		})
	}
}

func dumpRoutes(routes []*ir.Route) string {
	var out string
	for _, r := range routes {
		out += fmt.Sprintf("  %+v\n", *r)
	}
	return out
}
