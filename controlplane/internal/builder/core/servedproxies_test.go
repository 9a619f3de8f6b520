package core

import (
	"slices"
	"testing"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// TestServedProxies: the served HTTPProxies are those Served says, in input
// order, whether or not every input is served.
func TestServedProxies(t *testing.T) {
	a, b, c := proxy("a", ""), proxy("b", ""), proxy("c", "")
	other, bAgain := proxy("o", "someone-else"), proxy("b", "")
	for _, tc := range []struct {
		name string
		in   []*contourv1.HTTPProxy
		want []*contourv1.HTTPProxy
	}{
		{"all served", []*contourv1.HTTPProxy{a, b, c}, []*contourv1.HTTPProxy{a, b, c}},
		{"another class", []*contourv1.HTTPProxy{a, other, c}, []*contourv1.HTTPProxy{a, c}},
		{"a name twice: the last", []*contourv1.HTTPProxy{b, a, bAgain}, []*contourv1.HTTPProxy{a, bAgain}},
		{"none", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewSnapshot(&objects.Set{HTTPProxies: tc.in}, Options{}, nil)
			got := s.ServedProxies()
			if !slices.Equal(got, tc.want) {
				t.Fatalf("served %v, want %v", names(got), names(tc.want))
			}
			for _, p := range tc.in {
				if s.Served(p) != slices.Contains(got, p) {
					t.Errorf("%s: Served %v, but listed %v", p.Name, s.Served(p), slices.Contains(got, p))
				}
			}
		})
	}
}

func names(ps []*contourv1.HTTPProxy) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return out
}
