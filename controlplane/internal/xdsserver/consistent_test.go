package xdsserver

import (
	"context"
	"io"
	"log/slog"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/envoyproxy/go-control-plane/pkg/wellknown"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/portcullis/portcullis/controlplane/internal/translator"
)

// hcmFilter is an HTTP connection manager naming route configuration rds,
// or those of a scoped routes list.
func hcmFilter(t *testing.T, rds string, scoped ...string) *listenerv3.Filter {
	hcm := &hcmv3.HttpConnectionManager{StatPrefix: "test"}
	if rds != "" {
		hcm.RouteSpecifier = &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{RouteConfigName: rds}}
	} else {
		list := &hcmv3.ScopedRouteConfigurationsList{}
		for _, s := range scoped {
			list.ScopedRouteConfigurations = append(list.ScopedRouteConfigurations, &routev3.ScopedRouteConfiguration{Name: "scope-" + s, RouteConfigurationName: s})
		}
		hcm.RouteSpecifier = &hcmv3.HttpConnectionManager_ScopedRoutes{ScopedRoutes: &hcmv3.ScopedRoutes{
			ConfigSpecifier: &hcmv3.ScopedRoutes_ScopedRouteConfigurationsList{ScopedRouteConfigurationsList: list}}}
	}
	a, err := anypb.New(hcm)
	if err != nil {
		t.Fatal(err)
	}
	return &listenerv3.Filter{Name: wellknown.HTTPConnectionManager, ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: a}}
}

// listenerWith is a listener with a filter chain for each HCM filter; the
// last one is its default chain when def.
func listenerWith(name string, def bool, filters ...*listenerv3.Filter) *listenerv3.Listener {
	l := &listenerv3.Listener{Name: name}
	for _, f := range filters {
		l.FilterChains = append(l.FilterChains, &listenerv3.FilterChain{Filters: []*listenerv3.Filter{f}})
	}
	if def && len(l.FilterChains) > 0 {
		l.DefaultFilterChain, l.FilterChains = l.FilterChains[len(l.FilterChains)-1], l.FilterChains[:len(l.FilterChains)-1]
	}
	return l
}

func edsCluster(name, service string) *clusterv3.Cluster {
	return &clusterv3.Cluster{Name: name, ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS},
		EdsClusterConfig: &clusterv3.Cluster_EdsClusterConfig{ServiceName: service}}
}

func dnsCluster(name string) *clusterv3.Cluster {
	return &clusterv3.Cluster{Name: name, ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STRICT_DNS}}
}

func routeConfigs(names ...string) []proto.Message {
	var out []proto.Message
	for _, n := range names {
		out = append(out, &routev3.RouteConfiguration{Name: n})
	}
	return out
}

func loadAssignments(names ...string) []proto.Message {
	var out []proto.Message
	for _, n := range names {
		out = append(out, &endpointv3.ClusterLoadAssignment{ClusterName: n})
	}
	return out
}

// snapshotConsistent is go-control-plane's check, which checker replaces.
func snapshotConsistent(r *translator.Resources) error {
	snap := &cachev3.Snapshot{}
	for typeURL, list := range map[string][]proto.Message{
		resourcev3.ListenerType: r.Listeners, resourcev3.RouteType: r.Routes, resourcev3.ClusterType: r.Clusters,
		resourcev3.EndpointType: r.Endpoints, resourcev3.SecretType: r.Secrets,
	} {
		rs := make([]types.Resource, len(list))
		for i, m := range list {
			rs[i] = m.(types.Resource)
		}
		snap.Resources[cachev3.GetResponseType(typeURL)] = cachev3.NewResources("", rs)
	}
	return snap.Consistent()
}

// checker accepts exactly the sets go-control-plane's Snapshot.Consistent
// accepts.
func TestCheckerAgreesWithSnapshotConsistent(t *testing.T) {
	listeners := func() []proto.Message {
		return []proto.Message{
			listenerWith("ingress_http", false, hcmFilter(t, "ingress_http")),
			listenerWith("ingress_https", true, hcmFilter(t, "https/b"), hcmFilter(t, "https/a"), hcmFilter(t, "ingress_fallbackcert")),
			listenerWith("scoped", false, hcmFilter(t, "", "s1", "s2")),
			&listenerv3.Listener{Name: "tcp"},
		}
	}
	clusters := func() []proto.Message {
		return []proto.Message{edsCluster("a", ""), edsCluster("b", "b-service"), dnsCluster("dns"), edsCluster("d", "a")}
	}
	consistent := func() *translator.Resources {
		return &translator.Resources{Listeners: listeners(), Clusters: clusters(),
			Routes:    routeConfigs("https/a", "https/b", "ingress_fallbackcert", "ingress_http", "s1", "s2"),
			Endpoints: loadAssignments("a", "b-service")}
	}
	for _, c := range []struct {
		name   string
		change func(r *translator.Resources)
		ok     bool
	}{
		{"consistent", func(*translator.Resources) {}, true},
		{"unsorted lists", func(r *translator.Resources) {
			r.Routes = routeConfigs("s2", "ingress_http", "https/b", "https/a", "ingress_fallbackcert", "s1")
			r.Endpoints = loadAssignments("b-service", "a")
		}, true},
		{"a route configuration named twice", func(r *translator.Resources) {
			r.Listeners = append(r.Listeners, listenerWith("other", false, hcmFilter(t, "https/a")))
		}, true},
		{"a named route configuration missing", func(r *translator.Resources) { r.Routes = r.Routes[1:] }, false},
		{"a scoped route configuration missing", func(r *translator.Resources) { r.Routes = r.Routes[:len(r.Routes)-1] }, false},
		{"a route configuration nothing names", func(r *translator.Resources) { r.Routes = append(r.Routes, routeConfigs("zzz")...) }, false},
		{"no route configurations", func(r *translator.Resources) { r.Routes = nil }, false},
		{"an EDS cluster's endpoints missing", func(r *translator.Resources) { r.Endpoints = loadAssignments("a") }, false},
		{"endpoints no cluster names (the cluster's, not its service's)", func(r *translator.Resources) {
			r.Endpoints = loadAssignments("a", "b", "b-service")
		}, false},
		{"endpoints of a DNS cluster", func(r *translator.Resources) { r.Endpoints = loadAssignments("a", "b-service", "dns") }, false},
		{"no EDS clusters, no endpoints", func(r *translator.Resources) { r.Clusters, r.Endpoints = r.Clusters[2:3], nil }, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := consistent()
			c.change(r)
			want := snapshotConsistent(r)
			if (want == nil) != c.ok {
				t.Fatalf("the test is wrong: go-control-plane says %v", want)
			}
			got := (&checker{}).check(r, nil)
			if (got == nil) != c.ok {
				t.Errorf("check: %v, want an error: %v (go-control-plane: %v)", got, !c.ok, want)
			}
		})
	}
}

// The route configurations a listener names are kept by its name and
// hash: the same listener is not decoded again, and a listener of other
// content under the same name is.
func TestCheckerKeepsListenersByHash(t *testing.T) {
	var c checker
	res := func(l *listenerv3.Listener, routes ...string) *translator.Resources {
		return &translator.Resources{Listeners: []proto.Message{l}, Routes: routeConfigs(routes...)}
	}
	a := listenerWith("ingress_http", false, hcmFilter(t, "a"))
	if err := c.check(res(a, "a"), map[string]string{"ingress_http": "1"}); err != nil {
		t.Fatal(err)
	}
	// Kept: a listener of the same hash is not decoded (this one, built
	// wrongly for the test, would name no route configuration).
	if err := c.check(res(&listenerv3.Listener{Name: "ingress_http"}, "a"), map[string]string{"ingress_http": "1"}); err != nil {
		t.Errorf("the same listener: %v", err)
	}
	// What is kept is still checked against the route configurations.
	if err := c.check(res(a), map[string]string{"ingress_http": "1"}); err == nil {
		t.Error("a kept listener's route configuration missing: no error")
	}
	// Another hash: decoded.
	b := listenerWith("ingress_http", false, hcmFilter(t, "b"))
	if err := c.check(res(b, "b"), map[string]string{"ingress_http": "2"}); err != nil {
		t.Errorf("a changed listener: %v", err)
	}
	if len(c.routes) != 1 {
		t.Errorf("%d listeners kept, want those of the last check (1)", len(c.routes))
	}
}

// An inconsistent set is not published: the configuration in force stays.
func TestInconsistentResourcesAreNotPublished(t *testing.T) {
	s := New(slog.New(slog.NewTextHandler(io.Discard, nil)))
	good := &translator.Resources{Listeners: []proto.Message{listenerWith("ingress_http", false, hcmFilter(t, "ingress_http"))},
		Routes: routeConfigs("ingress_http"), Clusters: []proto.Message{edsCluster("a", "")}, Endpoints: loadAssignments("a")}
	v1, err := s.Update(context.Background(), good)
	if err != nil {
		t.Fatal(err)
	}
	bad := *good
	bad.Endpoints = nil
	if _, err := s.Update(context.Background(), &bad); err == nil {
		t.Fatal("an EDS cluster without endpoints published")
	}
	if got := s.world.Load().table(resourcev3.EndpointType).lookup("a"); got == nil {
		t.Error("the endpoints in force were removed")
	}
	if v, err := s.Update(context.Background(), good); err != nil || v != v1 {
		t.Errorf("the good set again: version %q, %v; want %q (unchanged)", v, err, v1)
	}
}
