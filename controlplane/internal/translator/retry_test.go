package translator

import (
	"testing"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

func TestRetryPolicyAndUpgrades(t *testing.T) {
	d := func(x time.Duration) *time.Duration { return &x }
	for _, tc := range []struct {
		name string
		in   ir.Route
		want *routev3.RetryPolicy
		ws   bool
	}{
		{name: "none"},
		{name: "a per-try timeout alone never retries", in: ir.Route{PerTryTimeout: d(time.Second)},
			want: &routev3.RetryPolicy{PerTryTimeout: durationpb.New(time.Second)}},
		{name: "retries", in: ir.Route{Retry: &ir.RetryPolicy{RetryOn: []string{"5xx", "reset"}, NumRetries: 2, PerTryTimeout: d(time.Second), RetriableStatusCodes: []uint32{503}}},
			want: &routev3.RetryPolicy{RetryOn: "5xx,reset", NumRetries: wrapperspb.UInt32(2), PerTryTimeout: durationpb.New(time.Second), RetriableStatusCodes: []uint32{503}}},
		{name: "no retries, an infinite per-try timeout is none", in: ir.Route{Retry: &ir.RetryPolicy{RetryOn: []string{"5xx"}, PerTryTimeout: d(0)}},
			want: &routev3.RetryPolicy{RetryOn: "5xx", NumRetries: wrapperspb.UInt32(0)}},
		{name: "a backoff is the base interval", in: ir.Route{Retry: &ir.RetryPolicy{RetryOn: []string{"retriable-status-codes"}, NumRetries: 3, RetriableStatusCodes: []uint32{500}, Backoff: d(100 * time.Millisecond)}},
			want: &routev3.RetryPolicy{RetryOn: "retriable-status-codes", NumRetries: wrapperspb.UInt32(3), RetriableStatusCodes: []uint32{500}, RetryBackOff: &routev3.RetryPolicy_RetryBackOff{BaseInterval: durationpb.New(100 * time.Millisecond)}}},
		{name: "a zero backoff is Envoy's default", in: ir.Route{Retry: &ir.RetryPolicy{RetryOn: []string{"reset"}, NumRetries: 1, Backoff: d(0)}},
			want: &routev3.RetryPolicy{RetryOn: "reset", NumRetries: wrapperspb.UInt32(1)}},
		{name: "websockets", in: ir.Route{Websocket: true}, ws: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Clusters = []ir.WeightedCluster{{Cluster: "c", Weight: 1}}
			a := route(&tc.in, routeSettings{}).GetRoute()
			if !proto.Equal(a.GetRetryPolicy(), tc.want) {
				t.Errorf("retry policy %v, want %v", a.GetRetryPolicy(), tc.want)
			}
			if got := len(a.GetUpgradeConfigs()) == 1 && a.GetUpgradeConfigs()[0].GetUpgradeType() == "websocket"; got != tc.ws || (!tc.ws && len(a.GetUpgradeConfigs()) > 0) {
				t.Errorf("upgrades %v, want websocket: %v", a.GetUpgradeConfigs(), tc.ws)
			}
		})
	}
}
