package gatewayapi

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
)

// finding is one reason a Gateway API condition is not in its good state.
type finding struct{ reason, message string }

// findings are the reasons of one condition; none: the condition is in its
// good state.
type findings []finding

func (f *findings) add(reason, format string, args ...any) {
	*f = append(*f, finding{reason, fmt.Sprintf(format, args...)})
}

// reason is the first finding's reason (the one the condition shows).
func (f findings) reason() string { return f[0].reason }

// message joins the findings' messages.
func (f findings) message() string {
	msgs := make([]string, len(f))
	for i, x := range f {
		msgs[i] = x.message
	}
	return strings.Join(msgs, "; ")
}

// cond is a condition with observedGeneration (its lastTransitionTime is
// the status package's business).
func cond[T, R ~string](typ T, ok bool, reason R, message string, generation int64) metav1.Condition {
	s := metav1.ConditionFalse
	if ok {
		s = metav1.ConditionTrue
	}
	return metav1.Condition{Type: string(typ), Status: s, Reason: string(reason), Message: message, ObservedGeneration: generation}
}

// goodWhenEmpty is a condition that is True (with okReason and okMessage)
// without findings, False with the first finding's reason otherwise.
func goodWhenEmpty[T, R ~string](typ T, f findings, okReason R, okMessage string, generation int64) metav1.Condition {
	if len(f) == 0 {
		return cond(typ, true, okReason, okMessage, generation)
	}
	return cond(typ, false, f.reason(), f.message(), generation)
}

// decodeFindings are the strict decoder's complaints about an object, as
// findings: an object with any is not served.
func decodeFindings(complaints []string) findings {
	var f findings
	for _, c := range complaints {
		f.add(core.DecodeComplaintReason(c), "%s", core.DecodeComplaintMessage(c))
	}
	return f
}
