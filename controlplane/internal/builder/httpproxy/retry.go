package httpproxy

import (
	"slices"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/apicheck"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// retryConditions are the values of retryPolicy.retryOn (the API's enum):
// Envoy's HTTP and gRPC retry conditions, passed on as they are.
var retryConditions = []string{
	"5xx", "gateway-error", "reset", "reset-before-request", "connect-failure",
	"envoy-ratelimited", "retriable-4xx", "refused-stream", "retriable-status-codes",
	"retriable-headers", "http3-post-connect-failure",
	"cancelled", "deadline-exceeded", "internal", "resource-exhausted", "unavailable",
}

// routeRetry validates a route's retryPolicy into its retries, with
// Contour's defaults: retryOn 5xx when empty, count 0 (unset) is 1 retry,
// -1 disables retries (the per-try timeout still bounds the one try).
func routeRetry(rt *Route, p *contourv1.RetryPolicy, errs *routeErrors) {
	if p == nil {
		return
	}
	rp := &ir.RetryPolicy{NumRetries: 1}
	switch {
	case p.NumRetries < -1:
		errs.add(contourv1.ConditionTypeRouteError, status.ReasonRetryPolicyNotValid, "RetryPolicy.Count: %d is not allowed: use -1 (no retries), 0 (the default, 1 retry) or more", p.NumRetries)
	case p.NumRetries == -1:
		rp.NumRetries = 0
	case p.NumRetries > 0:
		rp.NumRetries = uint32(min(p.NumRetries, 1<<32-1))
	}
	var err error
	if rp.PerTryTimeout, err = apicheck.ParseTimeout(p.PerTryTimeout); err != nil {
		errs.add(contourv1.ConditionTypeRouteError, status.ReasonRetryPolicyNotValid, "RetryPolicy.PerTryTimeout: %v", err)
	}
	for i, on := range p.RetryOn {
		if !slices.Contains(retryConditions, string(on)) {
			errs.add(contourv1.ConditionTypeRouteError, status.ReasonRetryPolicyNotValid, "RetryPolicy.RetryOn[%d]: %q is not a retry condition", i, on)
			continue
		}
		if !slices.Contains(rp.RetryOn, string(on)) {
			rp.RetryOn = append(rp.RetryOn, string(on))
		}
	}
	if len(p.RetryOn) == 0 {
		rp.RetryOn = []string{"5xx"}
	}
	for i, code := range p.RetriableStatusCodes {
		if code < 100 || code > 599 {
			errs.add(contourv1.ConditionTypeRouteError, status.ReasonRetryPolicyNotValid, "RetryPolicy.RetriableStatusCodes[%d]: %d is not an HTTP status (100-599)", i, code)
		}
	}
	if len(p.RetriableStatusCodes) > 0 && !slices.Contains(rp.RetryOn, "retriable-status-codes") {
		errs.warn(contourv1.ConditionTypeRouteError, status.ReasonRetryPolicyNotValid, "RetryPolicy.RetriableStatusCodes are ignored: they are retried only under the retryOn condition retriable-status-codes, which is not listed")
	}
	rp.RetriableStatusCodes = p.RetriableStatusCodes
	rt.Retry = rp
}
