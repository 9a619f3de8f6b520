package translator

import (
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

func TestLoadBalancing(t *testing.T) {
	ss := &ir.SlowStart{Window: time.Second, Aggression: 2, MinWeightPercent: 5}
	for _, tc := range []struct {
		lb     string
		policy clusterv3.Cluster_LbPolicy
		rr, lr bool
	}{
		{"", clusterv3.Cluster_ROUND_ROBIN, true, false},
		{"WeightedLeastRequest", clusterv3.Cluster_LEAST_REQUEST, false, true},
		{"Random", clusterv3.Cluster_RANDOM, false, false},
		{"RingHash", clusterv3.Cluster_RING_HASH, false, false},
	} {
		c := cluster(&ir.Cluster{Name: "c", LBPolicy: tc.lb, SlowStart: ss})
		if c.LbPolicy != tc.policy {
			t.Errorf("%q: policy %v, want %v", tc.lb, c.LbPolicy, tc.policy)
		}
		rr := c.GetRoundRobinLbConfig().GetSlowStartConfig()
		lr := c.GetLeastRequestLbConfig().GetSlowStartConfig()
		if (rr != nil) != tc.rr || (lr != nil) != tc.lr {
			t.Errorf("%q: slow start %v %v", tc.lb, rr, lr)
		}
		for _, cfg := range []*clusterv3.Cluster_SlowStartConfig{rr, lr} {
			if cfg != nil && (cfg.GetSlowStartWindow().AsDuration() != time.Second || cfg.GetAggression().GetDefaultValue() != 2 || cfg.GetMinWeightPercent().GetValue() != 5) {
				t.Errorf("%q: slow start %v", tc.lb, cfg)
			}
		}
	}
	if c := cluster(&ir.Cluster{Name: "c"}); c.LbConfig != nil {
		t.Errorf("lb config without slow start: %v", c.LbConfig)
	}
}

func TestHashPolicies(t *testing.T) {
	got := hashPolicies([]ir.HashPolicy{
		{Header: "x-user", Terminal: true},
		{QueryParameter: "s"},
		{SourceIP: true},
		{Cookie: &ir.HashCookie{Name: "C", Path: "/"}},
	})
	want := []*routev3.RouteAction_HashPolicy{
		{Terminal: true, PolicySpecifier: &routev3.RouteAction_HashPolicy_Header_{Header: &routev3.RouteAction_HashPolicy_Header{HeaderName: "x-user"}}},
		{PolicySpecifier: &routev3.RouteAction_HashPolicy_QueryParameter_{QueryParameter: &routev3.RouteAction_HashPolicy_QueryParameter{Name: "s"}}},
		{PolicySpecifier: &routev3.RouteAction_HashPolicy_ConnectionProperties_{ConnectionProperties: &routev3.RouteAction_HashPolicy_ConnectionProperties{SourceIp: true}}},
		{PolicySpecifier: &routev3.RouteAction_HashPolicy_Cookie_{Cookie: &routev3.RouteAction_HashPolicy_Cookie{Name: "C", Path: "/", Ttl: durationpb.New(0)}}},
	}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if !proto.Equal(got[i], want[i]) {
			t.Errorf("%d: got %v, want %v", i, got[i], want[i])
		}
	}
}
