package builder

import (
	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/apicheck"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// routeTimeouts validates a route's timeoutPolicy into its timeouts.
func routeTimeouts(rt *route, tp *contourv1.TimeoutPolicy, errs *routeErrors) {
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
