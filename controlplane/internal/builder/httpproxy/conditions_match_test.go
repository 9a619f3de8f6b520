package httpproxy

import (
	"reflect"
	"strings"
	"testing"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// TestMergeConditionsMatching: regex paths (alone and under an include's
// prefix), query parameter conditions and the header options regex,
// ignoreCase and treatMissingAsEmpty, valid and not.
func TestMergeConditionsMatching(t *testing.T) {
	hdr := func(h contourv1.HeaderMatchCondition) []contourv1.MatchCondition {
		return []contourv1.MatchCondition{{Header: &h}}
	}
	qp := func(q contourv1.QueryParameterMatchCondition) []contourv1.MatchCondition {
		return []contourv1.MatchCondition{{QueryParameter: &q}}
	}
	under := func(prefix string) Route { return Route{Route: ir.Route{Path: prefix}} }
	for _, tt := range []struct {
		name      string
		parent    Route
		conds     []contourv1.MatchCondition
		want      ir.Route
		wantErr   string // a substring of the error's message
		errReason string
	}{
		{name: "regex at the root",
			conds: []contourv1.MatchCondition{{Regex: `/v[0-9]+/.*`}},
			want:  ir.Route{PathKind: ir.PathRegex, Path: `/v[0-9]+/.*`}},
		{name: "regex not starting with / at the root",
			conds: []contourv1.MatchCondition{{Regex: `.*\.png`}},
			want:  ir.Route{PathKind: ir.PathRegex, Path: `.*\.png`}},
		{name: "regex under an include's prefix: quoted prefix, grouped regex",
			parent: under("/api.v1/"),
			conds:  []contourv1.MatchCondition{{Regex: `/a|/b`}},
			want:   ir.Route{PathKind: ir.PathRegex, Path: `/api\.v1(?:/a|/b)`}},
		{name: "regex under the prefix /",
			parent: under("/"),
			conds:  []contourv1.MatchCondition{{Regex: `/x.*`}},
			want:   ir.Route{PathKind: ir.PathRegex, Path: `/x.*`}},
		{name: "regex under a prefix must start with /",
			parent:  under("/api"),
			conds:   []contourv1.MatchCondition{{Regex: `.*\.png`}},
			wantErr: `regex condition ".*\\.png": under the prefix "/api" of the includes, a regex must start with /`, errReason: status.ReasonPathMatchConditionsNotValid},
		{name: "invalid regex",
			conds:   []contourv1.MatchCondition{{Regex: `/(`}},
			wantErr: `R: regex condition "/(": invalid regular expression`, errReason: status.ReasonPathMatchConditionsNotValid},
		{name: "regex too large for Envoy",
			conds:   []contourv1.MatchCondition{{Regex: "/" + strings.Repeat("(a|b)", 60)}},
			wantErr: "too large for Envoy", errReason: status.ReasonPathMatchConditionsNotValid},
		{name: "regex and prefix",
			conds:   []contourv1.MatchCondition{{Prefix: "/x"}, {Regex: "/y"}},
			wantErr: "a regex condition cannot be combined with a prefix or exact condition", errReason: status.ReasonPathMatchConditionsNotValid},
		{name: "two regexes",
			conds:   []contourv1.MatchCondition{{Regex: "/x"}, {Regex: "/y"}},
			wantErr: "more than one regex", errReason: status.ReasonPathMatchConditionsNotValid},
		{name: "path under a regex",
			parent:  Route{Route: ir.Route{PathKind: ir.PathRegex, Path: "/x.*"}},
			conds:   []contourv1.MatchCondition{{Prefix: "/y"}},
			wantErr: "cannot add a path condition under a regex match", errReason: status.ReasonPathMatchConditionsNotValid},

		{name: "header regex",
			conds: hdr(contourv1.HeaderMatchCondition{Name: "x-env", Regex: "prod|stage"}),
			want:  ir.Route{Headers: []ir.HeaderMatch{{Name: "x-env", Kind: "regex", Value: "prod|stage"}}}},
		{name: "header invalid regex",
			conds:   hdr(contourv1.HeaderMatchCondition{Name: "x-env", Regex: "a["}),
			wantErr: `header condition on "x-env": invalid regular expression`, errReason: status.ReasonHeaderMatchConditionsNotValid},
		{name: "header regex and exact",
			conds:   hdr(contourv1.HeaderMatchCondition{Name: "x-env", Regex: "a", Exact: "a"}),
			wantErr: "must set exactly one of present, notpresent, contains, notcontains, exact, notexact, regex", errReason: status.ReasonHeaderMatchConditionsNotValid},
		{name: "header ignoreCase on exact",
			conds: hdr(contourv1.HeaderMatchCondition{Name: "x-team", Exact: "Blue", IgnoreCase: true}),
			want:  ir.Route{Headers: []ir.HeaderMatch{{Name: "x-team", Kind: "exact", Value: "Blue", IgnoreCase: true}}}},
		{name: "header ignoreCase on notcontains",
			conds: hdr(contourv1.HeaderMatchCondition{Name: "x-team", NotContains: "Blue", IgnoreCase: true}),
			want:  ir.Route{Headers: []ir.HeaderMatch{{Name: "x-team", Kind: "notcontains", Value: "Blue", IgnoreCase: true}}}},
		{name: "header ignoreCase on regex",
			conds:   hdr(contourv1.HeaderMatchCondition{Name: "x-team", Regex: "blue", IgnoreCase: true}),
			wantErr: "ignoreCase applies to exact, notexact, contains and notcontains only, not regex", errReason: status.ReasonHeaderMatchConditionsNotValid},
		{name: "header ignoreCase on present",
			conds:   hdr(contourv1.HeaderMatchCondition{Name: "x-team", Present: true, IgnoreCase: true}),
			wantErr: "not present", errReason: status.ReasonHeaderMatchConditionsNotValid},
		{name: "header treatMissingAsEmpty on notexact",
			conds: hdr(contourv1.HeaderMatchCondition{Name: "x-env", NotExact: "prod", TreatMissingAsEmpty: true}),
			want:  ir.Route{Headers: []ir.HeaderMatch{{Name: "x-env", Kind: "notexact", Value: "prod", TreatMissingAsEmpty: true}}}},
		{name: "header treatMissingAsEmpty on exact",
			conds:   hdr(contourv1.HeaderMatchCondition{Name: "x-env", Exact: "prod", TreatMissingAsEmpty: true}),
			wantErr: "treatMissingAsEmpty applies to notexact and notcontains only, not exact", errReason: status.ReasonHeaderMatchConditionsNotValid},

		{name: "query exact, ignoring case",
			conds: qp(contourv1.QueryParameterMatchCondition{Name: "debug", Exact: "Yes", IgnoreCase: true}),
			want:  ir.Route{QueryParams: []ir.QueryParamMatch{{Name: "debug", Kind: "exact", Value: "Yes", IgnoreCase: true}}}},
		{name: "query prefix",
			conds: qp(contourv1.QueryParameterMatchCondition{Name: "v", Prefix: "2."}),
			want:  ir.Route{QueryParams: []ir.QueryParamMatch{{Name: "v", Kind: "prefix", Value: "2."}}}},
		{name: "query suffix",
			conds: qp(contourv1.QueryParameterMatchCondition{Name: "f", Suffix: ".json"}),
			want:  ir.Route{QueryParams: []ir.QueryParamMatch{{Name: "f", Kind: "suffix", Value: ".json"}}}},
		{name: "query contains",
			conds: qp(contourv1.QueryParameterMatchCondition{Name: "q", Contains: "x"}),
			want:  ir.Route{QueryParams: []ir.QueryParamMatch{{Name: "q", Kind: "contains", Value: "x"}}}},
		{name: "query regex",
			conds: qp(contourv1.QueryParameterMatchCondition{Name: "id", Regex: "[0-9]+"}),
			want:  ir.Route{QueryParams: []ir.QueryParamMatch{{Name: "id", Kind: "regex", Value: "[0-9]+"}}}},
		{name: "query present",
			conds: qp(contourv1.QueryParameterMatchCondition{Name: "trace", Present: true}),
			want:  ir.Route{QueryParams: []ir.QueryParamMatch{{Name: "trace", Kind: "present"}}}},
		{name: "query parameters accumulate under an include's",
			parent: Route{Route: ir.Route{Path: "/api", QueryParams: []ir.QueryParamMatch{{Name: "tenant", Kind: "present"}}}},
			conds:  append(qp(contourv1.QueryParameterMatchCondition{Name: "v", Exact: "2"}), contourv1.MatchCondition{Prefix: "/x"}),
			want:   ir.Route{Path: "/api/x", QueryParams: []ir.QueryParamMatch{{Name: "tenant", Kind: "present"}, {Name: "v", Kind: "exact", Value: "2"}}}},
		{name: "query without a name",
			conds:   qp(contourv1.QueryParameterMatchCondition{Exact: "1"}),
			wantErr: "query parameter condition must name a parameter", errReason: status.ReasonQueryParameterMatchConditionsNotValid},
		{name: "query without a match",
			conds:   qp(contourv1.QueryParameterMatchCondition{Name: "debug"}),
			wantErr: `query parameter condition on "debug" must set exactly one of exact, prefix, suffix, regex, contains, present`, errReason: status.ReasonQueryParameterMatchConditionsNotValid},
		{name: "query with two matches",
			conds:   qp(contourv1.QueryParameterMatchCondition{Name: "debug", Exact: "1", Present: true}),
			wantErr: "must set exactly one of", errReason: status.ReasonQueryParameterMatchConditionsNotValid},
		{name: "query invalid regex",
			conds:   qp(contourv1.QueryParameterMatchCondition{Name: "id", Regex: "(?P<"}),
			wantErr: "invalid regular expression", errReason: status.ReasonQueryParameterMatchConditionsNotValid},
		{name: "query ignoreCase on regex",
			conds:   qp(contourv1.QueryParameterMatchCondition{Name: "id", Regex: "a", IgnoreCase: true}),
			wantErr: "ignoreCase applies to exact, prefix, suffix and contains only, not regex", errReason: status.ReasonQueryParameterMatchConditionsNotValid},
		{name: "query control bytes",
			conds:   qp(contourv1.QueryParameterMatchCondition{Name: "id", Exact: "a\nb"}),
			wantErr: "line break", errReason: status.ReasonQueryParameterMatchConditionsNotValid},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := &status.Object{}
			got, ok := mergeConditions(&tt.parent, tt.conds, "R", contourv1.ConditionTypeRouteError, st)
			if tt.wantErr != "" {
				if ok || len(st.Errors) != 1 || !strings.Contains(st.Errors[0].Message, tt.wantErr) || st.Errors[0].Type != contourv1.ConditionTypeRouteError || st.Errors[0].Reason != tt.errReason {
					t.Fatalf("ok %v, errors %+v; want a RouteError %s saying %q", ok, st.Errors, tt.errReason, tt.wantErr)
				}
				return
			}
			if !ok || len(st.Errors) > 0 {
				t.Fatalf("ok %v, errors %+v", ok, st.Errors)
			}
			if !reflect.DeepEqual(got.Route, tt.want) {
				t.Errorf("route = %+v, want %+v", got.Route, tt.want)
			}
		})
	}
}

func TestQueryParamConditionsValid(t *testing.T) {
	for _, tt := range []struct {
		name string
		qs   []ir.QueryParamMatch
		ok   bool
	}{
		{"one exact per name", []ir.QueryParamMatch{{Name: "a", Kind: "exact", Value: "1"}, {Name: "b", Kind: "exact", Value: "1"}}, true},
		{"names are case-sensitive", []ir.QueryParamMatch{{Name: "a", Kind: "exact", Value: "1"}, {Name: "A", Kind: "exact", Value: "1"}}, true},
		{"exact and prefix", []ir.QueryParamMatch{{Name: "a", Kind: "exact", Value: "1"}, {Name: "a", Kind: "prefix", Value: "1"}}, true},
		{"two exacts", []ir.QueryParamMatch{{Name: "a", Kind: "exact", Value: "1"}, {Name: "a", Kind: "exact", Value: "2"}}, false},
	} {
		if err := queryParamConditionsValid(tt.qs); (err == nil) != tt.ok {
			t.Errorf("%s: err %v, want ok %v", tt.name, err, tt.ok)
		}
	}
}

func TestConditionsKeyDistinguishesNewFields(t *testing.T) {
	a := []contourv1.MatchCondition{{Prefix: "/x", QueryParameter: &contourv1.QueryParameterMatchCondition{Name: "v", Exact: "1"}}}
	b := []contourv1.MatchCondition{{Prefix: "/x", QueryParameter: &contourv1.QueryParameterMatchCondition{Name: "v", Exact: "2"}}}
	c := []contourv1.MatchCondition{{Prefix: "/x", Header: &contourv1.HeaderMatchCondition{Name: "h", Exact: "1", IgnoreCase: true}}}
	d := []contourv1.MatchCondition{{Prefix: "/x", Header: &contourv1.HeaderMatchCondition{Name: "h", Exact: "1"}}}
	if conditionsKey(a) == conditionsKey(b) || conditionsKey(c) == conditionsKey(d) {
		t.Error("different include conditions have the same key: an include would be refused as a duplicate")
	}
}
