package builder

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
// only when no answer began (a replica stopping: its connection refused,
// its streams refused or reset), and then every call in flight to that
// replica is retried at the same moment: with the default, a replica
// replaced under a load of only 4 concurrent checks failed the 4th
// (upstream_rq_retry_overflow; fail-closed routes answered 403). All of
// the calls in flight may be retries, and at least 16 at once when few
// are (a budget counts the requests in flight, which the failed ones have
// just left).
var extensionRetryBudget = ir.RetryBudget{Percent: 100, MinConcurrency: 16}
