package httpproxy

import (
	"reflect"
	"testing"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// TestMergeConditionsAppliesEveryField: every match field of a condition
// entry applies (an entry was once matched on its first field only, so
// {prefix, header} served the route without the header condition), and
// the path-match rules count the fields of one entry like separate entries.
func TestMergeConditionsAppliesEveryField(t *testing.T) {
	env := ir.HeaderMatch{Name: "x-env", Kind: "exact", Value: "prod"}
	for _, tt := range []struct {
		name    string
		parent  Route
		conds   []contourv1.MatchCondition
		want    ir.Route // when valid
		wantErr string   // the error's message, when invalid
	}{
		{name: "prefix and header in one entry",
			conds: []contourv1.MatchCondition{{Prefix: "/x", Header: &contourv1.HeaderMatchCondition{Name: "x-env", Exact: "prod"}}},
			want:  ir.Route{Path: "/x", Headers: []ir.HeaderMatch{env}}},
		{name: "exact and header in one entry",
			conds: []contourv1.MatchCondition{{Exact: "/y", Header: &contourv1.HeaderMatchCondition{Name: "x-env", Exact: "prod"}}},
			want:  ir.Route{PathKind: ir.PathExact, Path: "/y", Headers: []ir.HeaderMatch{env}}},
		{name: "under an inherited prefix and header",
			parent: Route{Route: ir.Route{Path: "/team", Headers: []ir.HeaderMatch{{Name: "x-tenant", Kind: "present"}}}},
			conds:  []contourv1.MatchCondition{{Prefix: "/api", Header: &contourv1.HeaderMatchCondition{Name: "x-env", Exact: "prod"}}},
			want:   ir.Route{Path: "/team/api", Headers: []ir.HeaderMatch{{Name: "x-tenant", Kind: "present"}, env}}},
		{name: "prefix and exact in one entry",
			conds:   []contourv1.MatchCondition{{Prefix: "/x", Exact: "/y"}},
			wantErr: "R: prefix and exact conditions cannot be combined in a condition block"},
		{name: "prefix and exact across entries",
			conds:   []contourv1.MatchCondition{{Prefix: "/x"}, {Exact: "/y"}},
			wantErr: "R: prefix and exact conditions cannot be combined in a condition block"},
		{name: "a prefix in two entries, one with a header",
			conds:   []contourv1.MatchCondition{{Prefix: "/x", Header: &contourv1.HeaderMatchCondition{Name: "x-env", Exact: "prod"}}, {Prefix: "/y"}},
			wantErr: "R: more than one prefix is not allowed in a condition block"},
		{name: "a valid prefix does not hide an invalid header of the same entry",
			conds:   []contourv1.MatchCondition{{Prefix: "/x", Header: &contourv1.HeaderMatchCondition{Name: "x-env"}}},
			wantErr: `R: header condition on "x-env" must set exactly one of present, notpresent, contains, notcontains, exact, notexact, regex`},
		{name: "an invalid prefix with a valid header",
			conds:   []contourv1.MatchCondition{{Prefix: "x", Header: &contourv1.HeaderMatchCondition{Name: "x-env", Exact: "prod"}}},
			wantErr: "R: prefix conditions must start with /, x was supplied"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := &status.Object{}
			got, ok := mergeConditions(&tt.parent, tt.conds, "R", contourv1.ConditionTypeRouteError, st)
			if tt.wantErr != "" {
				if ok || len(st.Errors) != 1 || st.Errors[0].Message != tt.wantErr {
					t.Fatalf("ok %v, errors %+v; want the error %q", ok, st.Errors, tt.wantErr)
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
