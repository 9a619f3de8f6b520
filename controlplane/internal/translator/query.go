package translator

import (
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// queryParamMatcher is one query parameter condition; a regex matches the
// whole value, as the IR says.
func queryParamMatcher(q ir.QueryParamMatch) *routev3.QueryParameterMatcher {
	qm := &routev3.QueryParameterMatcher{Name: q.Name}
	switch q.Kind {
	case "present":
		qm.QueryParameterMatchSpecifier = &routev3.QueryParameterMatcher_PresentMatch{PresentMatch: true}
	case "exact":
		qm.QueryParameterMatchSpecifier = stringMatch(&matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: q.Value}, IgnoreCase: q.IgnoreCase})
	case "prefix":
		qm.QueryParameterMatchSpecifier = stringMatch(&matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Prefix{Prefix: q.Value}, IgnoreCase: q.IgnoreCase})
	case "suffix":
		qm.QueryParameterMatchSpecifier = stringMatch(&matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Suffix{Suffix: q.Value}, IgnoreCase: q.IgnoreCase})
	case "contains":
		qm.QueryParameterMatchSpecifier = stringMatch(&matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Contains{Contains: q.Value}, IgnoreCase: q.IgnoreCase})
	case "regex":
		qm.QueryParameterMatchSpecifier = stringMatch(&matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_SafeRegex{SafeRegex: regex(q.Value)}})
	}
	return qm
}

func stringMatch(s *matcherv3.StringMatcher) *routev3.QueryParameterMatcher_StringMatch {
	return &routev3.QueryParameterMatcher_StringMatch{StringMatch: s}
}
