package translator

import (
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// circuitBreakers are a cluster's thresholds at the default priority,
// only the limits set (Envoy's defaults for the others); remaining
// capacity is tracked so that the stats show how close a cluster runs to
// its limits.
func circuitBreakers(cb *ir.CircuitBreakers) *clusterv3.CircuitBreakers {
	if cb == nil {
		return nil
	}
	out := &clusterv3.CircuitBreakers{}
	if cb.MaxConnections > 0 || cb.MaxPendingRequests > 0 || cb.MaxRequests > 0 || cb.MaxRetries > 0 || cb.RetryBudget != nil {
		out.Thresholds = []*clusterv3.CircuitBreakers_Thresholds{{
			Priority:           corev3.RoutingPriority_DEFAULT,
			MaxConnections:     uint32OrNil(cb.MaxConnections),
			MaxPendingRequests: uint32OrNil(cb.MaxPendingRequests),
			MaxRequests:        uint32OrNil(cb.MaxRequests),
			MaxRetries:         uint32OrNil(cb.MaxRetries),
			RetryBudget:        retryBudget(cb.RetryBudget),
			TrackRemaining:     true,
		}}
	}
	if cb.PerHostMaxConnections > 0 {
		out.PerHostThresholds = []*clusterv3.CircuitBreakers_Thresholds{{
			Priority:       corev3.RoutingPriority_DEFAULT,
			MaxConnections: wrapperspb.UInt32(cb.PerHostMaxConnections),
		}}
	}
	return out
}

// retryBudget is Envoy's retry_budget, which takes precedence over
// max_retries; nil for none.
func retryBudget(b *ir.RetryBudget) *clusterv3.CircuitBreakers_Thresholds_RetryBudget {
	if b == nil {
		return nil
	}
	return &clusterv3.CircuitBreakers_Thresholds_RetryBudget{
		BudgetPercent:       &typev3.Percent{Value: b.Percent},
		MinRetryConcurrency: wrapperspb.UInt32(b.MinConcurrency),
	}
}

// uint32OrNil is v, or nil (the default) for 0.
func uint32OrNil(v uint32) *wrapperspb.UInt32Value {
	if v == 0 {
		return nil
	}
	return wrapperspb.UInt32(v)
}
