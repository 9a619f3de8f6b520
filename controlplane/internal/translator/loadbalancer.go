package translator

import (
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

func lbPolicy(s string) clusterv3.Cluster_LbPolicy {
	switch s {
	case "WeightedLeastRequest":
		return clusterv3.Cluster_LEAST_REQUEST
	case "Random":
		return clusterv3.Cluster_RANDOM
	case ir.LBRingHash:
		return clusterv3.Cluster_RING_HASH
	}
	return clusterv3.Cluster_ROUND_ROBIN
}

// slowStart sets the cluster's slow start, in the configuration of its
// policy (RoundRobin or WeightedLeastRequest; the builder allows no
// other).
func slowStart(out *clusterv3.Cluster, c *ir.Cluster) {
	ss := c.SlowStart
	if ss == nil {
		return
	}
	cfg := &clusterv3.Cluster_SlowStartConfig{
		SlowStartWindow:  durationpb.New(ss.Window),
		Aggression:       &corev3.RuntimeDouble{DefaultValue: ss.Aggression, RuntimeKey: "portcullis.slow_start.aggression"},
		MinWeightPercent: &typev3.Percent{Value: ss.MinWeightPercent},
	}
	switch out.LbPolicy {
	case clusterv3.Cluster_ROUND_ROBIN:
		out.LbConfig = &clusterv3.Cluster_RoundRobinLbConfig_{RoundRobinLbConfig: &clusterv3.Cluster_RoundRobinLbConfig{SlowStartConfig: cfg}}
	case clusterv3.Cluster_LEAST_REQUEST:
		out.LbConfig = &clusterv3.Cluster_LeastRequestLbConfig_{LeastRequestLbConfig: &clusterv3.Cluster_LeastRequestLbConfig{SlowStartConfig: cfg}}
	}
}

// hashPolicies are a route's hash_policy: what RingHash clusters hash to
// choose an endpoint. A cookie has a TTL of 0 so that Envoy sets a session
// cookie on requests without one.
func hashPolicies(hs []ir.HashPolicy) []*routev3.RouteAction_HashPolicy {
	var out []*routev3.RouteAction_HashPolicy
	for _, h := range hs {
		p := &routev3.RouteAction_HashPolicy{Terminal: h.Terminal}
		switch {
		case h.Header != "":
			p.PolicySpecifier = &routev3.RouteAction_HashPolicy_Header_{Header: &routev3.RouteAction_HashPolicy_Header{HeaderName: h.Header}}
		case h.QueryParameter != "":
			p.PolicySpecifier = &routev3.RouteAction_HashPolicy_QueryParameter_{QueryParameter: &routev3.RouteAction_HashPolicy_QueryParameter{Name: h.QueryParameter}}
		case h.SourceIP:
			p.PolicySpecifier = &routev3.RouteAction_HashPolicy_ConnectionProperties_{ConnectionProperties: &routev3.RouteAction_HashPolicy_ConnectionProperties{SourceIp: true}}
		case h.Cookie != nil:
			p.PolicySpecifier = &routev3.RouteAction_HashPolicy_Cookie_{Cookie: &routev3.RouteAction_HashPolicy_Cookie{Name: h.Cookie.Name, Path: h.Cookie.Path, Ttl: durationpb.New(0)}}
		default:
			continue
		}
		out = append(out, p)
	}
	return out
}
