package builder

import (
	"fmt"
	"testing"

	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// A tally's origins follow the objects using a name as roots are counted
// in and out, and are kept (not recomputed) while those objects stay.
func TestTally(t *testing.T) {
	a, b := proxyRef("ns", "a"), proxyRef("ns", "b")
	rootA := &rootResult{output: output{clusterUses: uses{{"c", a}, {"d", a}}}}
	rootA2 := &rootResult{output: output{clusterUses: uses{{"c", a}}}} // a built again, without d
	rootB := &rootResult{output: output{clusterUses: uses{{"c", b}}}}
	tests := []struct {
		name  string
		steps func(rootTallies)
		want  map[string][]objects.Ref
	}{
		{"two roots", func(t rootTallies) { t.add(rootA, 1); t.add(rootB, 1) },
			map[string][]objects.Ref{"c": {a, b}, "d": {a}}},
		{"a root gone", func(t rootTallies) { t.add(rootA, 1); t.add(rootB, 1); t.add(rootB, -1) },
			map[string][]objects.Ref{"c": {a}, "d": {a}}},
		{"a root built again, in before out", func(t rootTallies) { t.add(rootA, 1); t.add(rootA2, 1); t.add(rootA, -1) },
			map[string][]objects.Ref{"c": {a}, "d": nil}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl := newRootTallies()
			tt.steps(tl)
			for name, want := range tt.want {
				if got := tl.clusters.origins(name); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("origins(%s) = %v, want %v", name, got, want)
				}
				if _, kept := tl.clusters[name]; kept != (want != nil) {
					t.Errorf("%s kept = %v, want %v (names nothing uses are forgotten)", name, kept, want != nil)
				}
			}
		})
	}

	// Counting a root in again before out keeps the computed origins.
	tl := newRootTallies()
	tl.add(rootA, 1)
	before := tl.clusters.origins("c")
	tl.add(rootA2, 1)
	tl.add(rootA, -1)
	if after := tl.clusters.origins("c"); &after[0] != &before[0] {
		t.Errorf("origins of c recomputed though the objects using it did not change")
	}
}
