package nodeagent

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
)

// resyncEvery is how often the Pods' statuses in the API server are
// checked against the node's.
const resyncEvery = 5 * time.Second

// resyncStatuses tells the pod controller again of every Pod whose status
// in the API server says otherwise than the node (phase, readiness, a
// container's state), until ctx ends. The pod controller writes a status
// once per notification and, under conflicts with other writers of the
// Pod, one was seen lost: the Pod stayed ContainerCreating in the API
// while its container ran.
func (a *Agent) resyncStatuses(ctx context.Context, pods corelisters.PodLister) {
	t := time.NewTicker(resyncEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		a.mu.Lock()
		all := make([]*podRuntime, 0, len(a.pods))
		for _, p := range a.pods {
			all = append(all, p)
		}
		a.mu.Unlock()
		for _, p := range all {
			have, err := pods.Pods(p.pod.Namespace).Get(p.pod.Name)
			if err != nil || have.UID != p.pod.UID {
				continue
			}
			if want := p.snapshot(); !sameStatus(have.Status, want.Status) {
				a.notifyPod(p)
			}
		}
	}
}

// sameStatus compares what a reader of a Pod's status acts on: the phase,
// the conditions' statuses, each container's readiness, restarts and
// state (waiting, running, terminated).
func sameStatus(have, want corev1.PodStatus) bool {
	if have.Phase != want.Phase || len(have.Conditions) != len(want.Conditions) ||
		len(have.ContainerStatuses) != len(want.ContainerStatuses) || len(have.InitContainerStatuses) != len(want.InitContainerStatuses) {
		return false
	}
	for i, c := range want.Conditions {
		if have.Conditions[i].Type != c.Type || have.Conditions[i].Status != c.Status {
			return false
		}
	}
	same := func(h, w []corev1.ContainerStatus) bool {
		for i, c := range w {
			if h[i].Ready != c.Ready || h[i].RestartCount != c.RestartCount || stateKind(h[i].State) != stateKind(c.State) {
				return false
			}
		}
		return true
	}
	return same(have.ContainerStatuses, want.ContainerStatuses) && same(have.InitContainerStatuses, want.InitContainerStatuses)
}

func stateKind(s corev1.ContainerState) string {
	switch {
	case s.Running != nil:
		return "running"
	case s.Terminated != nil:
		return "terminated"
	case s.Waiting != nil:
		return "waiting:" + s.Waiting.Reason
	}
	return ""
}
