package httpproxy

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// sessionAffinityCookie is the cookie of the Cookie strategy: Contour's,
// so that sessions survive a move from Contour.
const sessionAffinityCookie = "X-Contour-Session-Affinity"

// routeLoadBalancer validates a route's loadBalancerPolicy into the
// policy of its services' clusters ("" for RoundRobin) and the route's
// hash policies. As Contour: Cookie hashes a session cookie (set on the
// requests that lack it); RequestHash hashes the valid requestHashPolicies
// and, without any, is RoundRobin; invalid hash policies are ignored (with
// a warning SpecError/IgnoredField, Contour's), as are hash policies with
// another strategy (Contour ignores those silently). An unknown
// strategy is an error (Contour would use RoundRobin).
func routeLoadBalancer(rt *Route, p *contourv1.LoadBalancerPolicy, errs *routeErrors) string {
	if p == nil {
		return ""
	}
	if p.Strategy != "RequestHash" && len(p.RequestHashPolicies) > 0 {
		errs.warn(contourv1.ConditionTypeSpecError, status.ReasonIgnoredField, "LoadBalancerPolicy.RequestHashPolicies are ignored: they apply to the strategy RequestHash only")
	}
	switch p.Strategy {
	case "", "RoundRobin":
		return ""
	case "WeightedLeastRequest", "Random":
		return p.Strategy
	case "Cookie":
		rt.HashPolicies = []ir.HashPolicy{{Cookie: &ir.HashCookie{Name: sessionAffinityCookie, Path: "/"}}}
		return ir.LBRingHash
	case "RequestHash":
		for i, h := range p.RequestHashPolicies {
			hp, err := hashPolicy(h)
			if err != nil {
				errs.warn(contourv1.ConditionTypeSpecError, status.ReasonIgnoredField, "LoadBalancerPolicy.RequestHashPolicies[%d] is ignored: %v", i, err)
				continue
			}
			if dup := duplicateHash(rt.HashPolicies, hp); dup != "" {
				errs.warn(contourv1.ConditionTypeSpecError, status.ReasonIgnoredField, "LoadBalancerPolicy.RequestHashPolicies[%d] is ignored: %s specified multiple times", i, dup)
				continue
			}
			rt.HashPolicies = append(rt.HashPolicies, hp)
		}
		if len(rt.HashPolicies) == 0 {
			errs.warn(contourv1.ConditionTypeSpecError, status.ReasonIgnoredField, "LoadBalancerPolicy: the strategy RequestHash has no valid requestHashPolicies: RoundRobin is used")
			return ""
		}
		return ir.LBRingHash
	}
	errs.add(contourv1.ConditionTypeRouteError, status.ReasonInvalidLoadBalancerPolicy, "LoadBalancerPolicy.Strategy %q is not supported: use RoundRobin, WeightedLeastRequest, Random, RequestHash or Cookie", p.Strategy)
	return ""
}

// duplicateHash names what hp hashes if one of hps already hashes it
// (Contour ignores the later one, with a warning), else "".
func duplicateHash(hps []ir.HashPolicy, hp ir.HashPolicy) string {
	for _, o := range hps {
		switch {
		case hp.SourceIP && o.SourceIP:
			return "hashSourceIP"
		case hp.Header != "" && o.Header == hp.Header:
			return fmt.Sprintf("headerHashOptions.headerName %q", hp.Header)
		case hp.QueryParameter != "" && o.QueryParameter == hp.QueryParameter:
			return fmt.Sprintf("queryParameterHashOptions.parameterName %q", hp.QueryParameter)
		}
	}
	return ""
}

// hashPolicy is one requestHashPolicy, which must name exactly one
// attribute.
func hashPolicy(h contourv1.RequestHashPolicy) (ir.HashPolicy, error) {
	hp := ir.HashPolicy{Terminal: h.Terminal, SourceIP: h.HashSourceIP}
	n := 0
	if h.HashSourceIP {
		n++
	}
	if o := h.HeaderHashOptions; o != nil {
		n++
		if msgs := validation.IsHTTPHeaderName(o.HeaderName); len(msgs) > 0 {
			return hp, fmt.Errorf("headerHashOptions.headerName %q is not a header name: %s", o.HeaderName, strings.Join(msgs, "; "))
		}
		hp.Header = strings.ToLower(o.HeaderName)
	}
	if o := h.QueryParameterHashOptions; o != nil {
		n++
		if o.ParameterName == "" {
			return hp, fmt.Errorf("queryParameterHashOptions.parameterName is empty")
		}
		if err := core.NoControlBytes(o.ParameterName); err != nil {
			return hp, fmt.Errorf("queryParameterHashOptions.parameterName: %v", err)
		}
		hp.QueryParameter = o.ParameterName
	}
	if n != 1 {
		return hp, fmt.Errorf("exactly one of headerHashOptions, queryParameterHashOptions and hashSourceIP must be set, not %d", n)
	}
	return hp, nil
}
