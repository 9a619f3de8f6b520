package statuswriter

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
)

// The Contour kinds' merge keeps the conditions' rule of the Gateway API
// kinds (status.MergeCondition): a stale build does not take back a
// condition observed at a newer generation, an unchanged one keeps its
// time.
func TestContourMergeConditions(t *testing.T) {
	t0 := metav1.Unix(1_700_000_000, 0)
	valid := func(s metav1.ConditionStatus, gen int64, at metav1.Time) contourv1.DetailedCondition {
		return contourv1.DetailedCondition{Condition: metav1.Condition{Type: "Valid", Status: s, Reason: "R" + string(s), ObservedGeneration: gen, LastTransitionTime: at}}
	}
	conds := func(s *contourv1.HTTPProxyStatus) *[]contourv1.DetailedCondition { return &s.Conditions }
	tests := []struct {
		name      string
		cur, want contourv1.DetailedCondition
		expect    contourv1.DetailedCondition
	}{
		{"newer generation left alone", valid("True", 3, t0), valid("False", 2, metav1.Unix(1_800_000_000, 0)), valid("True", 3, t0)},
		{"unchanged status keeps its time", valid("True", 2, t0), valid("True", 3, metav1.Unix(1_800_000_000, 0)), valid("True", 3, t0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cur := contourv1.HTTPProxyStatus{Conditions: []contourv1.DetailedCondition{tt.cur}}
			want := contourv1.HTTPProxyStatus{CurrentStatus: "valid", Conditions: []contourv1.DetailedCondition{tt.want}}
			got := contourMerge(want, conds)(&cur)
			if len(got.Conditions) != 1 || !equality.Semantic.DeepEqual(got.Conditions[0], tt.expect) || got.CurrentStatus != "valid" {
				t.Errorf("merged %+v, want conditions [%+v]", got, tt.expect)
			}
		})
	}
}
