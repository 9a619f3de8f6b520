package status

import (
	"fmt"
	"testing"
)

// A problem is recorded once, whether the list is short (searched) or
// long (indexed), and WithErrors and WithWarnings never change the object
// they copy.
func TestProblemsRecordedOnce(t *testing.T) {
	for _, n := range []int{1, indexAt - 1, indexAt, indexAt + 1, 10 * indexAt} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			o := &Object{}
			for round := 0; round < 2; round++ {
				for i := range n {
					o.AddError("T", "R", fmt.Sprint(i))
					o.AddWarning("T", "R", fmt.Sprint(i))
				}
			}
			if len(o.Errors) != n || len(o.Warnings) != n {
				t.Fatalf("%d errors and %d warnings, want %d each", len(o.Errors), len(o.Warnings), n)
			}
			cp := o.WithErrors(Problem{"T", "R", "0"}, Problem{"T", "R", "new"})
			if len(cp.Errors) != n+1 || len(o.Errors) != n {
				t.Errorf("WithErrors: copy has %d errors (want %d), original %d (want %d)", len(cp.Errors), n+1, len(o.Errors), n)
			}
			wcp := o.WithWarnings(Problem{"T", "R", "0"}, Problem{"T", "R", "new"})
			if len(wcp.Warnings) != n+1 || len(o.Warnings) != n || len(wcp.Errors) != n {
				t.Errorf("WithWarnings: copy has %d warnings (want %d) and %d errors (want %d), original %d warnings (want %d)",
					len(wcp.Warnings), n+1, len(wcp.Errors), n, len(o.Warnings), n)
			}
			o.AddError("T", "R", "later")
			if len(o.Errors) != n+1 || len(cp.Errors) != n+1 {
				t.Errorf("after AddError on the original: %d and %d errors, want %d each", len(o.Errors), len(cp.Errors), n+1)
			}
		})
	}
}

// BenchmarkManyErrors is one HTTPProxy with 10,000 invalid routes (the
// most a virtual host may have): linear, not quadratic, in their number.
func BenchmarkManyErrors(b *testing.B) {
	msgs := make([]string, 10000)
	for i := range msgs {
		msgs[i] = fmt.Sprintf("Spec.Routes[%d]: port must be in the range 1-65535", i)
	}
	for b.Loop() {
		o := &Object{}
		for _, m := range msgs {
			o.AddError("ServiceError", "ServicePortInvalid", m)
		}
	}
}
