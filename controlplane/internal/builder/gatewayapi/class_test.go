package gatewayapi

import (
	"cmp"
	"slices"
	"testing"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// TestFeatures: the experimental channel claims the standard features
// and the experimental ones, sorted (as the API asks), none twice; the
// standard channel only the standard ones.
func TestFeatures(t *testing.T) {
	byName := func(a, b gwapiv1.SupportedFeature) int { return cmp.Compare(a.Name, b.Name) }
	if got := Features(false); !slices.Equal(got, SupportedFeatures) {
		t.Errorf("standard channel claims %v", got)
	}
	got := Features(true)
	if len(got) != len(SupportedFeatures)+len(ExperimentalFeatures) || !slices.IsSortedFunc(got, byName) {
		t.Errorf("experimental channel claims %v", got)
	}
	for _, f := range ExperimentalFeatures {
		if slices.Contains(SupportedFeatures, f) {
			t.Errorf("%s is claimed on the standard channel too", f.Name)
		}
		if !slices.Contains(got, f) {
			t.Errorf("%s is not claimed on the experimental channel", f.Name)
		}
	}
	if len(slices.CompactFunc(slices.Clone(got), func(a, b gwapiv1.SupportedFeature) bool { return a.Name == b.Name })) != len(got) {
		t.Errorf("a feature is claimed twice: %v", got)
	}
}
