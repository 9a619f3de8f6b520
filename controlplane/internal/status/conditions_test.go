package status

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
)

var (
	t0  = metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1  = metav1.NewTime(t0.Add(time.Minute))
	now = metav1.NewTime(t0.Add(time.Hour))
)

// cond is a condition of type typ, with a reason of its status, observed
// at generation gen and transitioned at at.
func cond(typ string, s metav1.ConditionStatus, gen int64, at metav1.Time) metav1.Condition {
	return metav1.Condition{Type: typ, Status: s, Reason: "Because" + string(s), ObservedGeneration: gen, LastTransitionTime: at}
}

func TestMergeCondition(t *testing.T) {
	var zero metav1.Time
	tests := []struct {
		name      string
		cur       *metav1.Condition
		want, out metav1.Condition
		// left: cur is returned as it is (sub-conditions included).
		left bool
	}{
		{"new condition gets now", nil, cond("Ready", "True", 1, zero), cond("Ready", "True", 1, now), false},
		{"new condition keeps a time of its own", nil, cond("Ready", "True", 1, t1), cond("Ready", "True", 1, t1), false},
		{"unchanged status keeps its time", new(cond("Ready", "True", 1, t0)), cond("Ready", "True", 2, zero), cond("Ready", "True", 2, t0), false},
		{"unchanged status keeps its time over want's", new(cond("Ready", "True", 1, t0)), cond("Ready", "True", 1, t1), cond("Ready", "True", 1, t0), false},
		{"unchanged status without a time gets now", new(cond("Ready", "True", 1, zero)), cond("Ready", "True", 1, zero), cond("Ready", "True", 1, now), false},
		{"changed status gets now", new(cond("Ready", "True", 1, t0)), cond("Ready", "False", 1, zero), cond("Ready", "False", 1, now), false},
		{"changed status keeps a time of its own", new(cond("Ready", "True", 1, t0)), cond("Ready", "Unknown", 1, t1), cond("Ready", "Unknown", 1, t1), false},
		{"newer generation is left alone", new(cond("Ready", "True", 3, t0)), cond("Ready", "False", 2, zero), cond("Ready", "True", 3, t0), true},
		{"same generation is replaced", new(cond("Ready", "True", 2, t0)), cond("Ready", "False", 2, zero), cond("Ready", "False", 2, now), false},
		{"older generation is replaced", new(cond("Ready", "True", 1, t0)), cond("Ready", "False", 2, zero), cond("Ready", "False", 2, now), false},
		{"want without a generation replaces", new(cond("Ready", "True", 3, t0)), cond("Ready", "False", 0, zero), cond("Ready", "False", 0, now), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cur *metav1.Condition
			if tt.cur != nil {
				c := *tt.cur
				cur = &c
			}
			if got := MergeCondition(cur, tt.want, now); !equality.Semantic.DeepEqual(got, tt.out) {
				t.Errorf("MergeCondition = %+v, want %+v", got, tt.out)
			}
			if tt.cur != nil && !equality.Semantic.DeepEqual(*cur, *tt.cur) {
				t.Errorf("cur modified: %+v, was %+v", *cur, *tt.cur)
			}
			// The same rule for Contour's conditions, whose sub-conditions
			// go with the condition.
			dc := func(c metav1.Condition, reason string) contourv1.DetailedCondition {
				return contourv1.DetailedCondition{Condition: c, Errors: []contourv1.SubCondition{{Type: "E", Status: "True", Reason: reason}}}
			}
			var dcur *contourv1.DetailedCondition
			wantErr := "Want"
			if tt.cur != nil {
				dcur = new(dc(*tt.cur, "Cur"))
				if tt.left {
					wantErr = "Cur"
				}
			}
			if got := MergeCondition(dcur, dc(tt.want, "Want"), now); !equality.Semantic.DeepEqual(got, dc(tt.out, wantErr)) {
				t.Errorf("MergeCondition (DetailedCondition) = %+v, want %+v", got, dc(tt.out, wantErr))
			}
		})
	}
}

func TestMergeConditions(t *testing.T) {
	var zero metav1.Time
	type cs = []metav1.Condition
	tests := []struct {
		name          string
		cur, want     cs
		merged, timed cs
	}{
		{"new object", nil, cs{cond("Accepted", "True", 1, zero), cond("Programmed", "False", 1, zero)},
			cs{cond("Accepted", "True", 1, now), cond("Programmed", "False", 1, now)}, cs{cond("Accepted", "True", 1, now), cond("Programmed", "False", 1, now)}},
		{"unchanged keeps its time, changed gets now", cs{cond("Accepted", "True", 1, t0), cond("Programmed", "True", 1, t0)},
			cs{cond("Accepted", "True", 2, zero), cond("Programmed", "False", 2, zero)},
			cs{cond("Accepted", "True", 2, t0), cond("Programmed", "False", 2, now)}, cs{cond("Accepted", "True", 2, t0), cond("Programmed", "False", 2, now)}},
		{"other controllers' conditions stay in place", cs{cond("example.com/DNS", "True", 1, t0), cond("Accepted", "False", 1, t0), cond("example.com/X", "True", 1, t0)},
			cs{cond("Accepted", "True", 1, zero)},
			cs{cond("example.com/DNS", "True", 1, t0), cond("Accepted", "True", 1, now), cond("example.com/X", "True", 1, t0)}, cs{cond("Accepted", "True", 1, now)}},
		{"added types go at the end in want's order", cs{cond("Accepted", "True", 1, t0)},
			cs{cond("ResolvedRefs", "True", 1, zero), cond("Accepted", "True", 1, zero), cond("ExtensionError", "True", 1, zero)},
			cs{cond("Accepted", "True", 1, t0), cond("ResolvedRefs", "True", 1, now), cond("ExtensionError", "True", 1, now)},
			cs{cond("ResolvedRefs", "True", 1, now), cond("Accepted", "True", 1, t0), cond("ExtensionError", "True", 1, now)}},
		{"a removed condition of ours goes only from a replaced list", cs{cond("Accepted", "True", 1, t0), cond("ExtensionError", "True", 1, t0)},
			cs{cond("Accepted", "True", 1, zero)},
			cs{cond("Accepted", "True", 1, t0), cond("ExtensionError", "True", 1, t0)}, cs{cond("Accepted", "True", 1, t0)}},
		{"newer generation is left alone", cs{cond("Accepted", "False", 5, t0)}, cs{cond("Accepted", "True", 4, zero)},
			cs{cond("Accepted", "False", 5, t0)}, cs{cond("Accepted", "False", 5, t0)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := append(cs(nil), tt.cur...)
			if got := MergeConditions(tt.cur, tt.want, now); !equality.Semantic.DeepEqual(got, tt.merged) {
				t.Errorf("MergeConditions =\n%+v, want\n%+v", got, tt.merged)
			}
			if got := KeepTimes(tt.cur, tt.want, now); !equality.Semantic.DeepEqual(got, tt.timed) {
				t.Errorf("KeepTimes =\n%+v, want\n%+v", got, tt.timed)
			}
			if !equality.Semantic.DeepEqual(before, tt.cur) {
				t.Errorf("cur modified: %+v, was %+v", tt.cur, before)
			}
		})
	}
}
