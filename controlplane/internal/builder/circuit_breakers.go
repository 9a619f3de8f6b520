package builder

import (
	"github.com/portcullis/portcullis/apis/projectcontour/v1alpha1"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// circuitBreakers reads an ExtensionService's circuitBreakerPolicy: a
// limit of 0 (unset) leaves Envoy's default, as in Contour; nil when no
// limit is set.
func circuitBreakers(p *v1alpha1.CircuitBreakers) *ir.CircuitBreakers {
	if p == nil || *p == (v1alpha1.CircuitBreakers{}) {
		return nil
	}
	return &ir.CircuitBreakers{
		MaxConnections:        p.MaxConnections,
		MaxPendingRequests:    p.MaxPendingRequests,
		MaxRequests:           p.MaxRequests,
		MaxRetries:            p.MaxRetries,
		PerHostMaxConnections: p.PerHostMaxConnections,
	}
}
