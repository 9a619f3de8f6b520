package translator

import (
	"slices"
	"strings"
	"testing"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	extauthzv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_authz/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// Routes that name their own authorization or processor get a filter
// each in their HCM, disabled there and enabled on them, the HCM's own
// filter disabled on them; the HCM's filters come from every route it
// serves, and a TLS host's only from its own.
func TestRouteFilters(t *testing.T) {
	policy := func(name string) ir.Origins {
		return ir.NewOrigins(objects.Ref{Kind: "ExtAuthPolicy", Namespace: "default", Name: name})
	}
	authA := &ir.ExtAuth{Cluster: "extension/auth/authz", Timeout: time.Second, Origins: policy("a")}
	// The same configuration from another policy: the same filter.
	authA2 := &ir.ExtAuth{Cluster: "extension/auth/authz", Timeout: time.Second, Origins: policy("a2")}
	// The same cluster, another timeout: another filter.
	authB := &ir.ExtAuth{Cluster: "extension/auth/authz", Timeout: 2 * time.Second, Origins: policy("b")}
	proc := &ir.ExtProc{Cluster: "extension/proc/processor"}
	nameA, nameB, nameP := routeAuthName(authA), routeAuthName(authB), routeProcName(proc)
	if nameA == nameB || nameA != routeAuthName(authA2) || !strings.HasPrefix(nameA, ExtAuthzFilterName+"/extension/auth/authz/") {
		t.Fatalf("names %s, %s, %s: want one per configuration, beginning with the filter's and the cluster's", nameA, routeAuthName(authA2), nameB)
	}
	cluster := []ir.WeightedCluster{{Cluster: "c", Weight: 1}}
	m := sharedModel([]*ir.VirtualHost{
		{FQDN: "a.example.com", Routes: []*ir.Route{
			{Path: "/a", Clusters: cluster, Auth: authA, AuthContext: map[string]string{"k": "v"}},
			{Path: "/", Clusters: cluster},
		}},
		{FQDN: "b.example.com", Routes: []*ir.Route{
			{Path: "/b", Clusters: cluster, Auth: authB},
			{Path: "/a2", Clusters: cluster, Auth: authA2, Processor: proc},
		}},
	},
		[]*ir.SecureVirtualHost{{VirtualHost: ir.VirtualHost{FQDN: "s.example.com", Routes: []*ir.Route{{Path: "/", Clusters: cluster}}}, Secret: "default/tls"}})
	m.GlobalAuth = &ir.ExtAuth{Cluster: "extension/auth/global"}
	res := Translate(m, Options{})

	hcm := hcmOf(t, listenerNamed(t, res.Listeners, HTTPListenerName).FilterChains[0].Filters[0])
	want := []string{ExtAuthzFilterName, min(nameA, nameB), max(nameA, nameB), nameP, RouterFilterName}
	got := hcmFilters(t, hcm)
	for _, f := range hcm.HttpFilters {
		if f.Disabled != (f.Name != ExtAuthzFilterName && f.Name != RouterFilterName) {
			t.Errorf("filter %s: disabled %v, want only the routes' filters disabled", f.Name, f.Disabled)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("HTTP listener filters %v, want %v", got, want)
	}
	if s := hcmOf(t, listenerNamed(t, res.Listeners, HTTPSListenerName).FilterChains[0].Filters[0]); len(s.HttpFilters) != 1 {
		t.Errorf("a TLS host whose routes name nothing has filters %v, want the router alone", s.HttpFilters)
	}

	routes := map[string]*routev3.Route{}
	for _, vh := range routeConfigNamed(t, res.Routes, HTTPRouteConfigName).VirtualHosts {
		for _, r := range vh.Routes {
			routes[vh.Name+r.Match.GetPathSeparatedPrefix()+r.Match.GetPrefix()] = r
		}
	}
	off := &extauthzv3.ExtAuthzPerRoute{Override: &extauthzv3.ExtAuthzPerRoute_Disabled{Disabled: true}}
	check := func(ctx map[string]string) *extauthzv3.ExtAuthzPerRoute {
		return &extauthzv3.ExtAuthzPerRoute{Override: &extauthzv3.ExtAuthzPerRoute_CheckSettings{CheckSettings: &extauthzv3.CheckSettings{ContextExtensions: ctx}}}
	}
	enabled := func(cfg proto.Message) *routev3.FilterConfig {
		if cfg == nil {
			return &routev3.FilterConfig{Config: &anypb.Any{}}
		}
		return &routev3.FilterConfig{Config: mustAny(cfg)}
	}
	for _, tc := range []struct {
		route string
		want  map[string]proto.Message
	}{
		{"a.example.com/a", map[string]proto.Message{ExtAuthzFilterName: off, nameA: enabled(check(map[string]string{"k": "v"}))}},
		{"a.example.com/", map[string]proto.Message{ExtAuthzFilterName: check(nil)}},
		{"b.example.com/b", map[string]proto.Message{ExtAuthzFilterName: off, nameB: enabled(check(nil))}},
		{"b.example.com/a2", map[string]proto.Message{ExtAuthzFilterName: off, nameA: enabled(check(nil)), nameP: enabled(nil)}},
	} {
		r := routes[tc.route]
		if r == nil {
			t.Fatalf("no route %s among %v", tc.route, routes)
		}
		if len(r.TypedPerFilterConfig) != len(tc.want) {
			t.Errorf("%s: typed_per_filter_config %v, want %v", tc.route, r.TypedPerFilterConfig, tc.want)
		}
		for name, w := range tc.want {
			if g := r.TypedPerFilterConfig[name]; !proto.Equal(g, mustAny(w)) {
				t.Errorf("%s: %s is %v, want %v", tc.route, name, g, w)
			}
		}
	}

	// A rejection of the HTTP listener is also the policies'.
	objs := res.Index.Objects(resourcev3.ListenerType, []string{HTTPListenerName}, "")
	for _, p := range []ir.Origins{authA.Origins, authA2.Origins, authB.Origins} {
		if !slices.Equal(objs.Union(p), objs) {
			t.Errorf("index of %s: %v, missing %v", HTTPListenerName, objs, p)
		}
	}
}

// A processor named by a route is disabled in the HCM, next to the HCM's
// own, and a route with both its own processor and an override of the
// HCM's only has the HCM's off.
func TestRouteProcessorBesideTheHCMs(t *testing.T) {
	proc := &ir.ExtProc{Cluster: "extension/proc/processor"}
	vh := &ir.SecureVirtualHost{VirtualHost: ir.VirtualHost{FQDN: "s.example.com", Routes: []*ir.Route{
		{Path: "/", Processor: proc, ExtProc: &ir.ExtProcPerRoute{Overrides: &ir.ExtProcOverrides{Mode: &ir.ProcessingMode{RequestBody: "BUFFERED"}}}},
	}}, Secret: "default/tls", ExtProc: &ir.ExtProc{Cluster: "extension/proc/host"}}
	route, chain := secureHost(secureHostsPrefix, vh, everyHCM{}, nil)
	filters := hcmFilters(t, hcmOf(t, chain.Filters[0]))
	if want := []string{ExtProcFilterName, routeProcName(proc), RouterFilterName}; !slices.Equal(filters, want) {
		t.Errorf("filters %v, want %v", filters, want)
	}
	per := route.VirtualHosts[0].Routes[0].TypedPerFilterConfig
	off := mustAny(&extprocv3.ExtProcPerRoute{Override: &extprocv3.ExtProcPerRoute_Disabled{Disabled: true}})
	if !proto.Equal(per[ExtProcFilterName], off) || per[routeProcName(proc)] == nil {
		t.Errorf("typed_per_filter_config %v, want the HCM's processor off and the route's on", per)
	}
}

// hcmFilters are the names of the HCM's filters, in order.
func hcmFilters(t *testing.T, hcm *hcmv3.HttpConnectionManager) []string {
	t.Helper()
	var out []string
	for _, f := range hcm.HttpFilters {
		out = append(out, f.Name)
	}
	return out
}

// A processor that only some routes of an HCM name must not route the
// request again: it runs after every authorization, and the HCM's other
// routes (other hosts' on a shared listener, other tenants' on a host
// routes of several namespaces share) have authorizations of their own
// that would then be skipped. The HCM's own processor, which every route
// of it has, keeps Envoy's default.
func TestRouteProcessorCannotRouteAgain(t *testing.T) {
	proc := &ir.ExtProc{Cluster: "extension/proc/processor"}
	vh := &ir.SecureVirtualHost{VirtualHost: ir.VirtualHost{FQDN: "s.example.com", Routes: []*ir.Route{
		{Path: "/tenant", Processor: proc, AuthDisabled: true},
		{Path: "/admin", Auth: &ir.ExtAuth{Cluster: "extension/auth/authz"}},
	}}, Secret: "default/tls", ExtProc: &ir.ExtProc{Cluster: "extension/proc/host"}}
	_, chain := secureHost(secureHostsPrefix, vh, everyHCM{}, nil)
	for _, f := range hcmOf(t, chain.Filters[0]).HttpFilters {
		if !strings.HasPrefix(f.Name, ExtProcFilterName) {
			continue
		}
		var cfg extprocv3.ExternalProcessor
		if err := f.GetTypedConfig().UnmarshalTo(&cfg); err != nil {
			t.Fatal(err)
		}
		want := extprocv3.ExternalProcessor_DEFAULT
		if f.Name != ExtProcFilterName {
			want = extprocv3.ExternalProcessor_RETAIN
		}
		if cfg.RouteCacheAction != want || cfg.DisableClearRouteCache {
			t.Errorf("%s: route_cache_action %v, want %v", f.Name, cfg.RouteCacheAction, want)
		}
	}
}
