package httpproxy

import (
	"fmt"
	"math"
	"slices"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// routeServices validates the services of one of p's routes and resolves
// each into its cluster, with the route's settings cs, and the mirror
// (if any) into its mirror policy; invalid services are left out, with an
// error.
func (b *rootBuilder) routeServices(p *contourv1.HTTPProxy, services []contourv1.Service, cs core.ClusterSettings, errs *routeErrors) ([]ir.WeightedCluster, []ir.Mirror) {
	// The services that are not mirrors: services itself when none is
	// (most routes), without a copy.
	isMirror := func(s contourv1.Service) bool { return s.Mirror }
	backends := services
	if slices.ContainsFunc(services, isMirror) {
		backends = slices.DeleteFunc(slices.Clone(services), isMirror)
	}
	switch {
	case len(services) == 0:
		errs.add(contourv1.ConditionTypeRouteError, status.ReasonRouteActionCountNotValid, "route.services must have at least one entry")
	case len(backends) == 0:
		errs.add(contourv1.ConditionTypeRouteError, status.ReasonNoServicesPresent, "route.services must have at least one entry that is not a mirror")
	}
	allZero, err := serviceWeights(backends)
	if err != nil {
		errs.add(contourv1.ConditionTypeServiceError, status.ReasonServiceWeightInvalid, "%v", err)
	}
	var out []ir.WeightedCluster
	if len(backends) > 0 {
		out = make([]ir.WeightedCluster, 0, len(backends))
	}
	var mirrors []ir.Mirror
	seenMirror := false
	for j, s := range services {
		if s.Mirror {
			if m, ok := b.routeMirror(p, j, s, !seenMirror, cs, errs); ok {
				mirrors = append(mirrors, m)
			}
			seenMirror = true
			continue
		}
		if c, ok := b.routeService(p, j, s, cs, errs); ok {
			// A negative weight (only a file can hold one) counts as 0,
			// as in serviceWeights.
			c.Weight = uint32(min(max(s.Weight, 0), math.MaxUint32))
			if allZero {
				c.Weight = 1
			}
			out = append(out, c)
		}
	}
	return out, mirrors
}

// serviceWeights checks that the weights fit Envoy's total (it rejects the
// whole route configuration, shared by every virtual host of the HTTP
// listener, over it); allZero: no service has a weight, all get 1.
func serviceWeights(services []contourv1.Service) (allZero bool, err error) {
	allZero = true
	var sum int64
	for _, s := range services {
		if s.Weight > 0 {
			allZero = false
		}
		sum += min(max(s.Weight, 0), math.MaxUint32)
	}
	if sum > math.MaxUint32 {
		return allZero, fmt.Errorf("the weights of the services add up to %d, more than %d", sum, uint32(math.MaxUint32))
	}
	return allZero, nil
}

// routeService resolves service j of a route of p into its cluster, with
// the route's settings cs (the weight is the caller's); false, with an
// error, when it is invalid.
func (b *rootBuilder) routeService(p *contourv1.HTTPProxy, j int, s contourv1.Service, cs core.ClusterSettings, errs *routeErrors) (ir.WeightedCluster, bool) {
	where := servicePlaces.at(j)
	fail := func(typ, reason, format string, args ...any) (ir.WeightedCluster, bool) {
		errs.add(typ, reason, format, args...)
		return ir.WeightedCluster{}, false
	}
	if s.Port < 1 || s.Port > 65535 {
		return fail(contourv1.ConditionTypeServiceError, status.ReasonServicePortInvalid, "%s: service %q: port must be in the range 1-65535", where, s.Name)
	}
	be, err := b.R.Backend(core.NsName(p.Namespace, s.Name), s.Port)
	if err != nil {
		return fail(contourv1.ConditionTypeServiceError, status.ReasonServiceUnresolvedReference, "%s: Service [%s:%d] is invalid or missing: %v", where, s.Name, s.Port, err)
	}
	protocol, up, uv, ok := b.serviceTLS(p.Namespace, where, s, be, errs) // serviceupstream.go
	if !ok {
		return ir.WeightedCluster{}, false
	}
	reqH, err := core.HeadersPolicy(s.RequestHeadersPolicy, true)
	if err != nil {
		return fail(contourv1.ConditionTypeServiceError, status.ReasonRequestHeadersPolicyInvalid, "%s.RequestHeadersPolicy: %v", where, err)
	}
	respH, err := core.HeadersPolicy(s.ResponseHeadersPolicy, false)
	if err != nil {
		return fail(contourv1.ConditionTypeServiceError, status.ReasonResponseHeadersPolicyInvalid, "%s.ResponseHeadersPolicy: %v", where, err)
	}
	cookies, err := cookieRewrites(s.CookieRewritePolicies)
	if err != nil {
		return fail(contourv1.ConditionTypeRouteError, status.ReasonCookieRewritePoliciesInvalid, "%s.CookieRewritePolicies%v", where, err)
	}
	c, ok := b.serviceCluster(p, "route", where, s, be, protocol, up, uv, cs, errs)
	if !ok {
		return ir.WeightedCluster{}, false
	}
	return ir.WeightedCluster{Cluster: c.Name, RequestHeaders: reqH, ResponseHeaders: respH, CookieRewrites: cookies}, true
}
