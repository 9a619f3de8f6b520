package translator

import (
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/proto"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

func TestMirrors(t *testing.T) {
	fraction := func(millionths uint32) *corev3.RuntimeFractionalPercent {
		return &corev3.RuntimeFractionalPercent{DefaultValue: &typev3.FractionalPercent{Numerator: millionths, Denominator: typev3.FractionalPercent_MILLION}}
	}
	in := []ir.Mirror{{Cluster: "all", Percent: 100}, {Cluster: "half", Percent: 50}, {Cluster: "bit", Percent: 0.25}, {Cluster: "none", Percent: 0}}
	want := []*routev3.RouteAction_RequestMirrorPolicy{
		{Cluster: "all"},
		{Cluster: "half", RuntimeFraction: fraction(500000)},
		{Cluster: "bit", RuntimeFraction: fraction(2500)},
		{Cluster: "none", RuntimeFraction: fraction(0)},
	}
	r := route(&ir.Route{Path: "/", Mirrors: in, Clusters: []ir.WeightedCluster{{Cluster: "c", Weight: 1}}}, routeSettings{})
	got := r.GetRoute().GetRequestMirrorPolicies()
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if !proto.Equal(got[i], want[i]) {
			t.Errorf("mirror %d: got %v, want %v", i, got[i], want[i])
		}
	}
}
