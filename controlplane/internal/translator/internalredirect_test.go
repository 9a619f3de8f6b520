package translator

import (
	"testing"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

func TestInternalRedirect(t *testing.T) {
	if internalRedirect(nil) != nil {
		t.Error("a policy without one")
	}
	three := uint32(3)
	for _, tc := range []struct {
		in         ir.InternalRedirect
		cross      bool
		predicates []string
	}{
		{in: ir.InternalRedirect{CrossScheme: "Never"}},
		{in: ir.InternalRedirect{CrossScheme: "Always", MaxRedirects: &three}, cross: true},
		{in: ir.InternalRedirect{CrossScheme: "SafeOnly", DenyRepeatedRoute: true}, cross: true,
			predicates: []string{"envoy.internal_redirect_predicates.safe_cross_scheme", "envoy.internal_redirect_predicates.previous_routes"}},
	} {
		got := internalRedirect(&tc.in)
		if got.GetAllowCrossSchemeRedirect() != tc.cross || len(got.GetPredicates()) != len(tc.predicates) {
			t.Fatalf("%+v: got %v", tc.in, got)
		}
		for i, p := range tc.predicates {
			if got.GetPredicates()[i].GetName() != p {
				t.Errorf("%+v: predicate %d %v, want %s", tc.in, i, got.GetPredicates()[i], p)
			}
		}
		if (tc.in.MaxRedirects != nil) != (got.GetMaxInternalRedirects() != nil) {
			t.Errorf("%+v: max %v", tc.in, got.GetMaxInternalRedirects())
		}
	}
}
