package core

import (
	"github.com/portcullis/portcullis/apis/projectcontour/v1alpha1"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// circuitBreakers reads an ExtensionService's circuitBreakerPolicy: a
// limit of 0 (unset) leaves Envoy's default, as in Contour. Retries are
// bounded by extensionRetryBudget unless maxRetries is set.
func circuitBreakers(p *v1alpha1.CircuitBreakers) *ir.CircuitBreakers {
	if p == nil {
		p = &v1alpha1.CircuitBreakers{}
	}
	out := &ir.CircuitBreakers{
		MaxConnections:        p.MaxConnections,
		MaxPendingRequests:    p.MaxPendingRequests,
		MaxRequests:           p.MaxRequests,
		MaxRetries:            p.MaxRetries,
		PerHostMaxConnections: p.PerHostMaxConnections,
	}
	if out.MaxRetries == 0 {
		out.RetryBudget = &extensionRetryBudget
	}
	return out
}

// extensionRetryBudget replaces Envoy's default limit of 3 retries in
// flight per cluster for ExtensionServices. Their calls are sent again
// only when no answer began (grpcservice.go in the translator). When a
// replica stops, round robin keeps choosing it until it is replaced or
// its endpoint is removed: each call sent to it is refused, then waits
// 25 ms to go elsewhere, so under load most calls in flight can be retries
// at the same moment. With the default, a replica replaced under 4
// concurrent requests failed one (upstream_rq_retry_overflow; a
// fail-closed route answered 403). Here all of the calls in flight may be
// retries, and at least 16 when few are. Each call is still sent at most
// 3 times, and only after a refused connection or stream, or a reset
// before any answer.
var extensionRetryBudget = ir.RetryBudget{Percent: 100, MinConcurrency: 16}
