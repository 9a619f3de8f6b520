package httpproxy

import (
	"time"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/apicheck"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// routeTimeouts validates a route's timeoutPolicy into its timeouts.
func routeTimeouts(rt *Route, tp *contourv1.TimeoutPolicy, errs *routeErrors) {
	if tp == nil {
		return
	}
	var err error
	if rt.ResponseTimeout, err = apicheck.ParseTimeout(tp.Response); err != nil {
		errs.add(contourv1.ConditionTypeRouteError, status.ReasonTimeoutPolicyNotValid, "TimeoutPolicy.Response: %v", err)
	}
	if rt.IdleTimeout, err = apicheck.ParseTimeout(tp.Idle); err != nil {
		errs.add(contourv1.ConditionTypeRouteError, status.ReasonTimeoutPolicyNotValid, "TimeoutPolicy.Idle: %v", err)
	}
}

// idleConnection validates a route's timeoutPolicy.idleConnection: the
// idle timeout of the upstream connections of its services' clusters
// (nil for Envoy's default of 1h; infinity, 0, for none).
func idleConnection(tp *contourv1.TimeoutPolicy, errs *routeErrors) *time.Duration {
	if tp == nil {
		return nil
	}
	d, err := apicheck.ParseTimeout(tp.IdleConnection)
	if err != nil {
		errs.add(contourv1.ConditionTypeRouteError, status.ReasonTimeoutPolicyNotValid, "TimeoutPolicy.IdleConnection: %v", err)
	}
	return d
}
