package nodeagent

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A status differs for the resync when what a reader acts on differs,
// not when only the conditions' times do.
func TestSameStatus(t *testing.T) {
	running := corev1.PodStatus{Phase: corev1.PodRunning,
		Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Unix(1, 0)}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "c", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}
	later := *running.DeepCopy()
	later.Conditions[0].LastTransitionTime = metav1.Unix(99, 0)
	creating := corev1.PodStatus{Phase: corev1.PodPending,
		Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}}}
	restarted := *running.DeepCopy()
	restarted.ContainerStatuses[0].RestartCount = 1
	for _, tc := range []struct {
		name       string
		have, want corev1.PodStatus
		same       bool
	}{
		{"identical", running, running, true},
		{"only a condition's time", running, later, true},
		{"lost update: creating in the API, running on the node", creating, running, false},
		{"a restart", running, restarted, false},
	} {
		if got := sameStatus(tc.have, tc.want); got != tc.same {
			t.Errorf("%s: sameStatus = %v, want %v", tc.name, got, tc.same)
		}
	}
}
