package translator

import (
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extauthzv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_authz/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// extAuthzHTTP makes cfg's server an HTTP one (serviceType http): the
// check is a request to the ExtensionService's cluster with the path
// prefixed, carrying the allowed request headers; a 200 answer allows the
// request and its allowed headers are added upstream, any other answer
// goes back to the client. The timeout is the same as the gRPC one (0, no
// timeout, is Envoy's "none" here too).
func extAuthzHTTP(cfg *extauthzv3.ExtAuthz, a *ir.ExtAuth) {
	h := a.HTTP
	svc := &extauthzv3.HttpService{
		ServerUri: &corev3.HttpUri{
			// Envoy requires a URI; the cluster says where the check
			// goes, the URI only names it.
			Uri:              "http://" + a.Authority,
			HttpUpstreamType: &corev3.HttpUri_Cluster{Cluster: a.Cluster},
			Timeout:          durationpb.New(a.Timeout),
		},
		PathPrefix: h.PathPrefix,
	}
	if m := nameMatchers(h.AllowedUpstreamHeaders); m != nil {
		svc.AuthorizationResponse = &extauthzv3.AuthorizationResponse{AllowedUpstreamHeaders: m}
	}
	cfg.Services = &extauthzv3.ExtAuthz_HttpService{HttpService: svc}
	// The filter's allowed_headers (the successor of the HTTP service's
	// authorization_request.allowed_headers): Envoy adds Host, Method,
	// Path, Content-Length and Authorization to them.
	cfg.AllowedHeaders = nameMatchers(h.AllowedAuthorizationHeaders)
}

// nameMatchers is a list of header name matchers; nil for none.
func nameMatchers(in []ir.NameMatch) *matcherv3.ListStringMatcher {
	if len(in) == 0 {
		return nil
	}
	out := &matcherv3.ListStringMatcher{}
	for _, m := range in {
		sm := &matcherv3.StringMatcher{IgnoreCase: m.IgnoreCase}
		switch m.Kind {
		case "exact":
			sm.MatchPattern = &matcherv3.StringMatcher_Exact{Exact: m.Value}
		case "prefix":
			sm.MatchPattern = &matcherv3.StringMatcher_Prefix{Prefix: m.Value}
		case "suffix":
			sm.MatchPattern = &matcherv3.StringMatcher_Suffix{Suffix: m.Value}
		default:
			sm.MatchPattern = &matcherv3.StringMatcher_Contains{Contains: m.Value}
		}
		out.Patterns = append(out.Patterns, sm)
	}
	return out
}
