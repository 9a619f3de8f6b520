package httpproxy

import (
	"slices"
	"testing"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
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

// TestLastOfEachMatch: of routes with the same match the last is kept,
// in small tie groups (compared pairwise) and large ones (through a map);
// routes of other matches keep their order.
func TestLastOfEachMatch(t *testing.T) {
	hdr := func(v string) []ir.HeaderMatch { return []ir.HeaderMatch{{Name: "x", Kind: "exact", Value: v}} }
	for _, n := range []int{2, smallTieGroup + 5} {
		var routes []*ir.Route
		for i := range n {
			// Alternating /aa and /bb with header values a, b: each
			// match repeats; the last two of each are the kept ones.
			path := []string{"/aa", "/bb"}[i%2]
			routes = append(routes, &ir.Route{Path: path, Headers: hdr("v"), Redirect: &ir.Redirect{StatusCode: i}})
		}
		routes = append(routes, &ir.Route{Path: "/aa", Headers: hdr("w")}, &ir.Route{Path: "/a"})
		got := lastOfEachMatch(routes)
		var codes []int
		for _, r := range got {
			if r.Redirect != nil {
				codes = append(codes, r.Redirect.StatusCode)
			}
		}
		if want := []int{n - 2, n - 1}; len(got) != 4 || !slices.Equal(codes, want) || got[2].Headers[0].Value != "w" || got[3].Path != "/a" {
			t.Errorf("%d routes: kept %d (redirect codes %v, want %v), last two %+v %+v", n, len(got), codes, want, got[len(got)-2], got[len(got)-1])
		}
	}
}
