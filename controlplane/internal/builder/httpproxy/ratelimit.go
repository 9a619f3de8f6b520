package httpproxy

import (
	"fmt"
	"strings"
	"time"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// hostRateLimit validates the virtual host's local rate limit: one bucket
// for the host's routes (and those it includes) without their own. An
// invalid one is an error on the root (not served rather than served
// unlimited). The global rate limit is a refused field
// (internal/fields).
func hostRateLimit(vh *contourv1.VirtualHost, st *status.Object) *ir.LocalRateLimit {
	if vh.RateLimitPolicy == nil {
		return nil
	}
	l, err := localRateLimit(vh.RateLimitPolicy.Local)
	if err != nil {
		st.AddError(contourv1.ConditionTypeVirtualHostError, status.ReasonRateLimitPolicyNotValid, "Spec.VirtualHost.RateLimitPolicy: "+err.Error())
	}
	return l
}

// routeRateLimit sets the route's own local rate limit, a bucket of its
// own that replaces its host's for it.
func routeRateLimit(rt *Route, r *contourv1.Route, errs *routeErrors) {
	if r.RateLimitPolicy == nil {
		return
	}
	l, err := localRateLimit(r.RateLimitPolicy.Local)
	if err != nil {
		errs.add(contourv1.ConditionTypeRouteError, status.ReasonRateLimitPolicyNotValid, "RateLimitPolicy: %v", err)
		return
	}
	rt.RateLimit = l
}

// rateLimitUnits are the API's units and the interval each refills the
// bucket.
var rateLimitUnits = map[string]time.Duration{"second": time.Second, "minute": time.Minute, "hour": time.Hour}

// localRateLimit validates a local rate limit; nil for none.
func localRateLimit(in *contourv1.LocalRateLimitPolicy) (*ir.LocalRateLimit, error) {
	if in == nil {
		return nil, nil
	}
	interval, ok := rateLimitUnits[in.Unit]
	switch {
	case in.Requests == 0:
		return nil, fmt.Errorf("local.requests must be at least 1")
	case !ok:
		return nil, fmt.Errorf("local.unit %q is not second, minute or hour", in.Unit)
	case uint64(in.Requests)+uint64(in.Burst) > 1<<32-1:
		return nil, fmt.Errorf("local.requests plus local.burst is more than %d", uint32(1<<32-1))
	case in.ResponseStatusCode != 0 && !envoyErrorStatuses[in.ResponseStatusCode]:
		return nil, fmt.Errorf("local.responseStatusCode %d is not one Envoy answers with (400-417, 421-424, 426, 428, 429, 431, 500-508, 510, 511)", in.ResponseStatusCode)
	}
	l := &ir.LocalRateLimit{Requests: in.Requests, Burst: in.Burst, Interval: interval, Status: in.ResponseStatusCode}
	seen := map[string]bool{}
	for _, h := range in.ResponseHeadersToAdd {
		if err := core.HeaderValueValid("add", h.Name, h.Value); err != nil {
			return nil, fmt.Errorf("local.responseHeadersToAdd: %v", err)
		}
		key := strings.ToLower(h.Name)
		if seen[key] {
			return nil, fmt.Errorf("local.responseHeadersToAdd: duplicate header %q", h.Name)
		}
		seen[key] = true
		l.ResponseHeaders = append(l.ResponseHeaders, ir.HeaderValue{Name: h.Name, Value: h.Value})
	}
	return l, nil
}

// envoyErrorStatuses are the 4xx and 5xx statuses of Envoy's StatusCode
// enumeration, the only ones its rate limit answers with: another would
// make Envoy reject the route configuration every host of the listener
// shares. TestEnvoyErrorStatuses keeps it in step with Envoy's.
var envoyErrorStatuses = map[uint32]bool{
	400: true, 401: true, 402: true, 403: true, 404: true, 405: true, 406: true, 407: true, 408: true, 409: true,
	410: true, 411: true, 412: true, 413: true, 414: true, 415: true, 416: true, 417: true,
	421: true, 422: true, 423: true, 424: true, 426: true, 428: true, 429: true, 431: true,
	500: true, 501: true, 502: true, 503: true, 504: true, 505: true, 506: true, 507: true, 508: true, 510: true, 511: true,
}
