package translator

import (
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	previousroutesv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/internal_redirect/previous_routes/v3"
	safecrossschemev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/internal_redirect/safe_cross_scheme/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// internalRedirect is a route's internal_redirect_policy. SafeOnly allows
// cross-scheme redirects under the safe_cross_scheme predicate (an HTTPS
// request may be redirected to HTTP or HTTPS, an HTTP one only to HTTP);
// DenyRepeatedRoute adds the previous_routes predicate.
func internalRedirect(p *ir.InternalRedirect) *routev3.InternalRedirectPolicy {
	if p == nil {
		return nil
	}
	out := &routev3.InternalRedirectPolicy{
		RedirectResponseCodes:    p.Codes,
		AllowCrossSchemeRedirect: p.CrossScheme == "Always" || p.CrossScheme == "SafeOnly",
	}
	if p.MaxRedirects != nil {
		out.MaxInternalRedirects = wrapperspb.UInt32(*p.MaxRedirects)
	}
	if p.CrossScheme == "SafeOnly" {
		out.Predicates = append(out.Predicates, &corev3.TypedExtensionConfig{
			Name:        "envoy.internal_redirect_predicates.safe_cross_scheme",
			TypedConfig: mustAny(&safecrossschemev3.SafeCrossSchemeConfig{}),
		})
	}
	if p.DenyRepeatedRoute {
		out.Predicates = append(out.Predicates, &corev3.TypedExtensionConfig{
			Name:        "envoy.internal_redirect_predicates.previous_routes",
			TypedConfig: mustAny(&previousroutesv3.PreviousRoutesConfig{}),
		})
	}
	return out
}
