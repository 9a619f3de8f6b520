package gatewayapi

import (
	"fmt"
	"time"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// retryOnErrors are the Envoy conditions a rule with retry always retries
// on, whatever its codes: a connection that fails or is refused
// (HTTPRouteRetryConnectionError), and a try that gets no answer, reset
// or cut by the backendRequest timeout (HTTPRouteRetryBackendTimeout).
var retryOnErrors = []string{"connect-failure", "refused-stream", "reset"}

// defaultAttempts is the retries of a rule whose retry has no attempts
// (the API leaves it to the implementation): Envoy's default.
const defaultAttempts = 1

// ruleRetry reads a rule's retry: attempts retries of each request to a
// backend, on its codes and on connection errors and timeouts (each try
// bounded by backendRequest, the rule's timeout bounding them all), at
// least backoff apart.
func ruleRetry(r *gwapiv1.HTTPRouteRetry, backendRequest *time.Duration) (*ir.RetryPolicy, error) {
	out := &ir.RetryPolicy{NumRetries: defaultAttempts, PerTryTimeout: backendRequest}
	if a := r.Attempts; a != nil {
		if *a < 1 {
			return nil, fmt.Errorf("attempts %d is not 1 or more", *a)
		}
		out.NumRetries = uint32(min(*a, 1<<32-1))
	}
	for i, c := range r.Codes {
		// The API's range; Envoy would take a 2xx, and retry successes.
		if c < 400 || c > 599 {
			return nil, fmt.Errorf("codes[%d]: %d is not an error status (400-599)", i, c)
		}
		out.RetriableStatusCodes = append(out.RetriableStatusCodes, uint32(c))
	}
	if len(out.RetriableStatusCodes) > 0 {
		out.RetryOn = append(out.RetryOn, "retriable-status-codes")
	}
	out.RetryOn = append(out.RetryOn, retryOnErrors...)
	if b := r.Backoff; b != nil {
		d, err := gatewayDuration(*b)
		if err != nil {
			return nil, fmt.Errorf("backoff: %w", err)
		}
		if d > 0 {
			out.Backoff = &d
		}
	}
	return out, nil
}
