package bootstrap

import (
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
)

// The static listeners of the readiness and stats endpoints, and the
// cluster of the admin interface they forward to.
const (
	ReadyListenerName = "portcullis-ready"
	StatsListenerName = "portcullis-stats"
	adminClusterName  = "envoy-admin"
)

// readyListener is a listener on host:port that answers GET /ready from
// Envoy's admin interface, and nothing else: a kubelet probe reaches the
// Pod's address, while the admin interface (which can change Envoy's
// state) stays on loopback. /ready is LIVE once Envoy has its first
// configuration, and 503 while it drains.
func readyListener(host string, port uint32) (*listenerv3.Listener, error) {
	return adminPathListener(ReadyListenerName, "ready", host, port, "/ready")
}

// statsListener is a listener on host:port that answers GET
// /stats/prometheus from the admin interface, and nothing else: Prometheus
// scrapes Envoy's statistics there (the query string, e.g. ?usedonly,
// passes; every other path of the admin interface is a 404).
func statsListener(host string, port uint32) (*listenerv3.Listener, error) {
	return adminPathListener(StatsListenerName, "stats", host, port, "/stats/prometheus")
}

// adminPathListener is a listener on host:port that forwards GET of the
// exact path to the admin interface, and answers anything else with 404.
func adminPathListener(name, statPrefix, host string, port uint32, path string) (*listenerv3.Listener, error) {
	router, err := anypb.New(&routerv3.Router{})
	if err != nil {
		return nil, err
	}
	hcm, err := anypb.New(&hcmv3.HttpConnectionManager{
		StatPrefix: statPrefix,
		RouteSpecifier: &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: &routev3.RouteConfiguration{
			Name: statPrefix,
			VirtualHosts: []*routev3.VirtualHost{{
				Name:    statPrefix,
				Domains: []string{"*"},
				Routes: []*routev3.Route{{
					Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Path{Path: path},
						Headers: []*routev3.HeaderMatcher{{Name: ":method", HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{StringMatch: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: "GET"}}}}}},
					Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: adminClusterName}}},
				}},
			}},
		}},
		HttpFilters: []*hcmv3.HttpFilter{{Name: "envoy.filters.http.router", ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: router}}},
	})
	if err != nil {
		return nil, err
	}
	return &listenerv3.Listener{
		Name:    name,
		Address: socket(host, port),
		FilterChains: []*listenerv3.FilterChain{{Filters: []*listenerv3.Filter{{
			Name: "envoy.filters.network.http_connection_manager", ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: hcm},
		}}}},
	}, nil
}

// adminCluster is the static cluster of the admin interface.
func adminCluster(adminHost string, adminPort uint32) *clusterv3.Cluster {
	return &clusterv3.Cluster{
		Name:                 adminClusterName,
		ConnectTimeout:       durationpb.New(time.Second),
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC},
		LoadAssignment: &endpointv3.ClusterLoadAssignment{
			ClusterName: adminClusterName,
			Endpoints: []*endpointv3.LocalityLbEndpoints{{LbEndpoints: []*endpointv3.LbEndpoint{{
				HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{Address: socket(adminHost, adminPort)}},
			}}}},
		},
	}
}
