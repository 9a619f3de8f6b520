package status

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
)

// Cond is a condition of the kinds whose status is written: a plain
// Kubernetes condition (the Gateway API's) or a Contour condition with
// sub-conditions.
type Cond interface {
	metav1.Condition | contourv1.DetailedCondition
}

// base is the Kubernetes condition of c.
func base[C Cond](c *C) *metav1.Condition {
	switch c := any(c).(type) {
	case *contourv1.DetailedCondition:
		return &c.Condition
	default:
		return any(c).(*metav1.Condition)
	}
}

// MergeCondition is the one rule by which a condition is set over the
// current one of its type (cur; nil when there is none), at the compute
// stage and at the status writer alike. As meta.SetStatusCondition: when
// cur has the same status, want keeps cur's lastTransitionTime (unless it
// has none); otherwise want's own time, or now when want has none.
// Further, a cur observed at a newer generation than want (when want
// says, observedGeneration > 0) is returned unchanged: want was computed
// from an older snapshot of the object and must not take the condition
// back.
func MergeCondition[C Cond](cur *C, want C, now metav1.Time) C {
	if cur == nil {
		if base(&want).LastTransitionTime.IsZero() {
			base(&want).LastTransitionTime = now
		}
		return want
	}
	c, w := base(cur), base(&want)
	switch {
	case w.ObservedGeneration > 0 && c.ObservedGeneration > w.ObservedGeneration:
		return *cur
	case c.Status == w.Status && !c.LastTransitionTime.IsZero():
		w.LastTransitionTime = c.LastTransitionTime
	case w.LastTransitionTime.IsZero():
		w.LastTransitionTime = now
	}
	return want
}

// FindCondition returns the condition of the given type in cs, or nil.
func FindCondition[C Cond](cs []C, typ string) *C {
	for i := range cs {
		if base(&cs[i]).Type == typ {
			return &cs[i]
		}
	}
	return nil
}

// KeepTimes returns want, each condition set over cur's of its type by
// MergeCondition. Conditions of cur that want has no type of are dropped:
// for lists want replaces whole (a listener's, a route parent's).
func KeepTimes[C Cond](cur, want []C, now metav1.Time) []C {
	out := make([]C, len(want))
	for i, w := range want {
		out[i] = MergeCondition(FindCondition(cur, base(&w).Type), w, now)
	}
	return out
}

// MergeConditions sets want's conditions in cur (a list other controllers
// may also write conditions to), each by MergeCondition: a condition of
// cur of a type want has is replaced in place, the others stay, want's new
// types are added at the end in want's order. cur is never modified.
func MergeConditions[C Cond](cur, want []C, now metav1.Time) []C {
	out := slices.Clone(cur)
	for _, w := range KeepTimes(cur, want, now) {
		if c := FindCondition(out, base(&w).Type); c != nil {
			*c = w
		} else {
			out = append(out, w)
		}
	}
	return out
}
