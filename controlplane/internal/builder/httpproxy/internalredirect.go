package httpproxy

import (
	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// routeInternalRedirect validates a route's internalRedirectPolicy:
// redirect codes among 301, 302, 303, 307 and 308; allowCrossSchemeRedirect
// Always, Never (the default) or SafeOnly. maxInternalRedirects unset (0)
// leaves Envoy's default of 1 redirect.
func routeInternalRedirect(rt *Route, p *contourv1.HTTPInternalRedirectPolicy, errs *routeErrors) {
	if p == nil {
		return
	}
	ok := true
	for i, c := range p.RedirectResponseCodes {
		switch c {
		case 301, 302, 303, 307, 308:
		default:
			errs.add(contourv1.ConditionTypeRouteError, status.ReasonInternalRedirectPolicyNotValid, "InternalRedirectPolicy.RedirectResponseCodes[%d]: %d is not a redirect status Envoy follows (301, 302, 303, 307 or 308)", i, c)
			ok = false
		}
	}
	switch p.AllowCrossSchemeRedirect {
	case "", "Never", "Always", "SafeOnly":
	default:
		errs.add(contourv1.ConditionTypeRouteError, status.ReasonInternalRedirectPolicyNotValid, "InternalRedirectPolicy.AllowCrossSchemeRedirect %q is not one of Always, Never and SafeOnly", p.AllowCrossSchemeRedirect)
		ok = false
	}
	if !ok {
		return
	}
	x := &ir.InternalRedirect{CrossScheme: p.AllowCrossSchemeRedirect, DenyRepeatedRoute: p.DenyRepeatedRouteRedirect}
	if x.CrossScheme == "" {
		x.CrossScheme = "Never"
	}
	if p.MaxInternalRedirects > 0 {
		n := p.MaxInternalRedirects
		x.MaxRedirects = &n
	}
	for _, c := range p.RedirectResponseCodes {
		x.Codes = append(x.Codes, uint32(c))
	}
	rt.InternalRedirect = x
}
