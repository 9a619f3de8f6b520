package translator

import (
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/proto"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

func TestRouteMatch(t *testing.T) {
	exact := func(v string) *matcherv3.StringMatcher {
		return &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: v}}
	}
	re := func(v string) *matcherv3.StringMatcher {
		return &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: v}}}
	}
	for _, tc := range []struct {
		name string
		in   ir.Route
		want *routev3.RouteMatch
	}{
		{"regex path: safe_regex over the whole path",
			ir.Route{PathKind: ir.PathRegex, Path: `/v[0-9]+/.*`},
			&routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: `/v[0-9]+/.*`}}}},
		{"regex header",
			ir.Route{Path: "/", Headers: []ir.HeaderMatch{{Name: "x-version", Kind: "regex", Value: `v[12]`}}},
			&routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"},
				Headers: []*routev3.HeaderMatcher{{Name: "x-version", HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{StringMatch: re(`v[12]`)}}}}},
		{"the method is the :method header",
			ir.Route{Path: "/a", Headers: []ir.HeaderMatch{{Name: ":method", Kind: "exact", Value: "POST"}}},
			&routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_PathSeparatedPrefix{PathSeparatedPrefix: "/a"},
				Headers: []*routev3.HeaderMatcher{{Name: ":method", HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{StringMatch: exact("POST")}}}}},
		{"query parameters: exact, regex, present, in order",
			ir.Route{PathKind: ir.PathExact, Path: "/search", QueryParams: []ir.QueryParamMatch{
				{Name: "q", Kind: "exact", Value: "envoy"}, {Name: "page", Kind: "regex", Value: `[0-9]+`}, {Name: "debug", Kind: "present"},
			}},
			&routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Path{Path: "/search"}, QueryParameters: []*routev3.QueryParameterMatcher{
				{Name: "q", QueryParameterMatchSpecifier: &routev3.QueryParameterMatcher_StringMatch{StringMatch: exact("envoy")}},
				{Name: "page", QueryParameterMatchSpecifier: &routev3.QueryParameterMatcher_StringMatch{StringMatch: re(`[0-9]+`)}},
				{Name: "debug", QueryParameterMatchSpecifier: &routev3.QueryParameterMatcher_PresentMatch{PresentMatch: true}},
			}}},
		{"header ignoreCase and treatMissingAsEmpty",
			ir.Route{Path: "/", Headers: []ir.HeaderMatch{
				{Name: "x-team", Kind: "exact", Value: "Blue", IgnoreCase: true},
				{Name: "x-env", Kind: "notcontains", Value: "prod", IgnoreCase: true, TreatMissingAsEmpty: true},
			}},
			&routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}, Headers: []*routev3.HeaderMatcher{
				{Name: "x-team", HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{StringMatch: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: "Blue"}, IgnoreCase: true}}},
				{Name: "x-env", InvertMatch: true, TreatMissingHeaderAsEmpty: true, HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{StringMatch: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Contains{Contains: "prod"}, IgnoreCase: true}}},
			}}},
		{"query parameters: prefix, suffix, contains, ignoring case",
			ir.Route{Path: "/", QueryParams: []ir.QueryParamMatch{
				{Name: "v", Kind: "prefix", Value: "2."}, {Name: "f", Kind: "suffix", Value: ".JSON", IgnoreCase: true}, {Name: "q", Kind: "contains", Value: "x"},
			}},
			&routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}, QueryParameters: []*routev3.QueryParameterMatcher{
				{Name: "v", QueryParameterMatchSpecifier: &routev3.QueryParameterMatcher_StringMatch{StringMatch: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Prefix{Prefix: "2."}}}},
				{Name: "f", QueryParameterMatchSpecifier: &routev3.QueryParameterMatcher_StringMatch{StringMatch: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Suffix{Suffix: ".JSON"}, IgnoreCase: true}}},
				{Name: "q", QueryParameterMatchSpecifier: &routev3.QueryParameterMatcher_StringMatch{StringMatch: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Contains{Contains: "x"}}}},
			}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := new(routeBlock)
			setMatch(b, &tc.in)
			if got := &b.match; !proto.Equal(got, tc.want) {
				t.Errorf("got  %v\nwant %v", got, tc.want)
			}
		})
	}
}
