package translator

import (
	"fmt"
	"slices"
	"testing"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

func TestRouteConfigMergesIdenticalVirtualHosts(t *testing.T) {
	redirect := func(path string) *ir.Route { return &ir.Route{Path: path, HTTPSRedirect: true} }
	host := func(fqdn string, routes ...*ir.Route) *ir.VirtualHost {
		return &ir.VirtualHost{FQDN: fqdn, Routes: routes}
	}
	// Enough hosts to translate them on several goroutines.
	many := []*ir.VirtualHost{host("z.example.com", redirect("/other"))}
	for i := range 100 {
		many = append(many, host(fmt.Sprintf("h%03d.example.com", i), redirect("/")))
	}
	for _, tc := range []struct {
		name  string
		hosts []*ir.VirtualHost
		// want: the virtual hosts' names, each with its domains' hosts.
		want map[string][]string
	}{
		{
			name:  "same routes: one virtual host, named after the first",
			hosts: []*ir.VirtualHost{host("b.example.com", redirect("/")), host("a.example.com", redirect("/"))},
			want:  map[string][]string{"a.example.com": {"a.example.com", "b.example.com"}},
		},
		{
			name:  "different paths stay apart",
			hosts: []*ir.VirtualHost{host("a.example.com", redirect("/")), host("b.example.com", redirect("/b"))},
			want:  map[string][]string{"a.example.com": {"a.example.com"}, "b.example.com": {"b.example.com"}},
		},
		{
			name: "a redirect and a forward of the same path stay apart",
			hosts: []*ir.VirtualHost{host("a.example.com", redirect("/")),
				host("b.example.com", &ir.Route{Path: "/", Clusters: []ir.WeightedCluster{{Cluster: "c", Weight: 1}}})},
			want: map[string][]string{"a.example.com": {"a.example.com"}, "b.example.com": {"b.example.com"}},
		},
		{
			name: "same routes in another order stay apart",
			hosts: []*ir.VirtualHost{host("a.example.com", redirect("/x"), redirect("/y")),
				host("b.example.com", redirect("/y"), redirect("/x"))},
			want: map[string][]string{"a.example.com": {"a.example.com"}, "b.example.com": {"b.example.com"}},
		},
		{
			name:  "many hosts",
			hosts: many,
			want: map[string][]string{
				"h000.example.com": func() (out []string) {
					for i := range 100 {
						out = append(out, fmt.Sprintf("h%03d.example.com", i))
					}
					return out
				}(),
				"z.example.com": {"z.example.com"},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc, hosts, rb := routeConfig("test", tc.hosts, routeSettings{}, nil)
			checkAssembled(t, rc, rb)
			// The index says which Envoy virtual host serves each host.
			got := map[string][]string{}
			for _, h := range hosts {
				got[h.vhost] = append(got[h.vhost], h.fqdn)
			}
			for _, vh := range rc.VirtualHosts {
				// The shared listeners strip the port: one domain per host.
				if want := got[vh.Name]; !slices.Equal(vh.Domains, want) {
					t.Errorf("%s: domains %v, want %v", vh.Name, vh.Domains, want)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("virtual hosts: got %v, want %v", got, tc.want)
			}
		})
	}
}

// The HTTP listener's redirects to HTTPS carry the port clients reach the
// HTTPS listener on, unless it is 443 (the default port of https URLs); a
// cached translation made with another port is not reused.
func TestHTTPSRedirectPort(t *testing.T) {
	m := sharedModel([]*ir.VirtualHost{{FQDN: "a.example.com", Routes: []*ir.Route{{Path: "/", HTTPSRedirect: true}}}}, nil)
	c := NewCache()
	for _, tc := range []struct {
		port uint32
		want uint32
	}{{0, 0}, {443, 0}, {18443, 18443}, {8443, 8443}, {0, 0}} {
		opts := Options{}
		opts.HTTPSRedirectPort = tc.port
		for _, cache := range []*Cache{nil, c} {
			res := TranslateCached(m, opts, cache)
			rc := routeConfigNamed(t, res.Routes, HTTPRouteConfigName)
			got := rc.VirtualHosts[0].Routes[0].GetRedirect()
			if got == nil || !got.GetHttpsRedirect() || got.GetPortRedirect() != tc.want {
				t.Errorf("port %d (cache %v): redirect %v, want https with port %d", tc.port, cache != nil, got, tc.want)
			}
		}
	}
}

// What a route does instead of, or besides, forwarding.
func TestRouteActions(t *testing.T) {
	second := time.Second
	one := []ir.WeightedCluster{{Cluster: "default/a/80", Weight: 1}}
	for _, tc := range []struct {
		name  string
		in    ir.Route
		check func(t *testing.T, r *routev3.Route)
	}{
		{"a direct response with a body", ir.Route{DirectResponse: &ir.DirectResponse{Status: 500, Body: "no backend"}}, func(t *testing.T, r *routev3.Route) {
			d := r.GetDirectResponse()
			if d.GetStatus() != 500 || d.GetBody().GetInlineString() != "no backend" {
				t.Errorf("direct response %v, want 500 with its body", d)
			}
		}},
		{"a direct response without a body", ir.Route{DirectResponse: &ir.DirectResponse{Status: 404}}, func(t *testing.T, r *routev3.Route) {
			if d := r.GetDirectResponse(); d.GetStatus() != 404 || d.Body != nil {
				t.Errorf("direct response %v, want 404 without a body", d)
			}
		}},
		{"the HTTPS redirect comes first", ir.Route{HTTPSRedirect: true, Redirect: &ir.Redirect{Hostname: "x"}, DirectResponse: &ir.DirectResponse{Status: 500}}, func(t *testing.T, r *routev3.Route) {
			if !r.GetRedirect().GetHttpsRedirect() || r.GetRedirect().GetHostRedirect() != "" {
				t.Errorf("action %v, want the HTTPS redirect", r.Action)
			}
		}},
		{"a per-try timeout: a retry policy that only bounds the try", ir.Route{Clusters: one, PerTryTimeout: &second}, func(t *testing.T, r *routev3.Route) {
			p := r.GetRoute().GetRetryPolicy()
			if p.GetPerTryTimeout().AsDuration() != time.Second || p.GetRetryOn() != "" || p.GetNumRetries() != nil {
				t.Errorf("retry policy %v, want only a per-try timeout of 1s", p)
			}
		}},
		{"no per-try timeout, no retry policy", ir.Route{Clusters: one}, func(t *testing.T, r *routev3.Route) {
			if p := r.GetRoute().GetRetryPolicy(); p != nil {
				t.Errorf("retry policy %v, want none", p)
			}
		}},
		{"an unknown weighted cluster answers 500", ir.Route{Clusters: []ir.WeightedCluster{{Cluster: "default/a/80", Weight: 1}, {Cluster: "invalid", Weight: 1}}}, func(t *testing.T, r *routev3.Route) {
			if c := r.GetRoute().GetClusterNotFoundResponseCode(); c != routev3.RouteAction_INTERNAL_SERVER_ERROR {
				t.Errorf("cluster_not_found_response_code %v, want INTERNAL_SERVER_ERROR", c)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			in.Path = "/"
			tc.check(t, route(&in, routeSettings{}))
		})
	}
}
