package httpproxy

import (
	"testing"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
)

// TestIncludeAtRoot: the includes Contour never counts as duplicates
// (includeMatchConditionsIdentical) are those matching every request of
// their parent, and only those.
func TestIncludeAtRoot(t *testing.T) {
	for _, tc := range []struct {
		name  string
		conds []contourv1.MatchCondition
		want  bool
	}{
		{"no conditions", nil, true},
		{"prefix /", []contourv1.MatchCondition{{Prefix: "/"}}, true},
		{"prefix //", []contourv1.MatchCondition{{Prefix: "//"}}, true},
		{"prefix /api", []contourv1.MatchCondition{{Prefix: "/api"}}, false},
		{"prefix / and a header", []contourv1.MatchCondition{{Prefix: "/"}, {Header: &contourv1.HeaderMatchCondition{Name: "x", Present: true}}}, false},
		{"a query parameter", []contourv1.MatchCondition{{QueryParameter: &contourv1.QueryParameterMatchCondition{Name: "q", Present: true}}}, false},
		{"exact /", []contourv1.MatchCondition{{Exact: "/"}}, false},
	} {
		if got := includeAtRoot(tc.conds); got != tc.want {
			t.Errorf("%s: includeAtRoot = %v, want %v", tc.name, got, tc.want)
		}
	}
}
