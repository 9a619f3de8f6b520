package nodeagent

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The virtual-kubelet pod controller calls these (node.PodLifecycleHandler
// and node.PodNotifier).

func podKey(ns, name string) string { return ns + "/" + name }

// CreatePod starts the Pod (its address and namespace, volumes and
// containers) unless it already runs with the same UID; a failure is
// recorded as a FailedCreatePodSandBox event and returned for the pod
// controller to retry.
func (a *Agent) CreatePod(ctx context.Context, pod *corev1.Pod) error {
	key := podKey(pod.Namespace, pod.Name)
	a.mu.Lock()
	if old := a.pods[key]; old != nil && old.pod.UID == pod.UID {
		a.mu.Unlock()
		return nil
	}
	a.mu.Unlock()
	p, err := a.startPod(ctx, pod)
	if err != nil {
		a.recorder.Eventf(pod, corev1.EventTypeWarning, "FailedCreatePodSandBox", "%v", err)
		return err
	}
	a.mu.Lock()
	a.pods[key] = p
	a.mu.Unlock()
	// Services added while the Pod started reached no hosts file of it.
	if err := a.writeHosts(p); err != nil {
		slog.Warn("pod /etc/hosts", "pod", key, "error", err)
	}
	slog.Info("pod started", "pod", key, "ip", p.net.ip)
	a.notifyPod(p)
	return nil
}

// UpdatePod takes the new metadata (labels, annotations); the containers
// of a Pod do not change.
func (a *Agent) UpdatePod(ctx context.Context, pod *corev1.Pod) error {
	p := a.get(pod.Namespace, pod.Name)
	if p == nil {
		return errdefs.NotFoundf("pod %s/%s", pod.Namespace, pod.Name)
	}
	p.mu.Lock()
	p.pod.ObjectMeta = *pod.ObjectMeta.DeepCopy()
	p.mu.Unlock()
	// Its labels select it for policies and as a policy's peer.
	a.policies.podLabels(pod.UID, pod.Labels)
	return nil
}

// DeletePod stops the Pod's containers with its grace period; once they
// have exited the Pod's terminal status is notified and the pod controller
// removes it from the API.
func (a *Agent) DeletePod(ctx context.Context, pod *corev1.Pod) error {
	p := a.get(pod.Namespace, pod.Name)
	if p == nil || p.pod.UID != pod.UID {
		return errdefs.NotFoundf("pod %s/%s", pod.Namespace, pod.Name)
	}
	grace := terminationGrace(pod)
	p.mu.Lock()
	p.pod.DeletionTimestamp = pod.DeletionTimestamp
	p.pod.DeletionGracePeriodSeconds = pod.DeletionGracePeriodSeconds
	p.mu.Unlock()
	p.stop(grace, true)
	slog.Info("pod stopping", "pod", podKey(pod.Namespace, pod.Name), "grace", grace)
	go func() {
		<-p.stopped
		slog.Info("pod stopped", "pod", podKey(pod.Namespace, pod.Name))
		// As the kubelet does once a deleted Pod's containers are gone:
		// remove it from the API now (the pod controller would wait for
		// the whole grace period).
		zero := int64(0)
		err := a.client.CoreV1().Pods(pod.Namespace).Delete(context.Background(), pod.Name, metav1.DeleteOptions{
			GracePeriodSeconds: &zero, Preconditions: metav1.NewUIDPreconditions(string(pod.UID)),
		})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			slog.Warn("deleting stopped pod", "pod", podKey(pod.Namespace, pod.Name), "error", err)
		}
		a.mu.Lock()
		if a.pods[podKey(pod.Namespace, pod.Name)] == p {
			delete(a.pods, podKey(pod.Namespace, pod.Name))
		}
		a.mu.Unlock()
	}()
	return nil
}

// GetPod is the Pod with its current status, or a not-found error.
func (a *Agent) GetPod(ctx context.Context, ns, name string) (*corev1.Pod, error) {
	p := a.get(ns, name)
	if p == nil {
		return nil, errdefs.NotFoundf("pod %s/%s", ns, name)
	}
	return p.snapshot(), nil
}

// GetPodStatus is the Pod's current status, or a not-found error.
func (a *Agent) GetPodStatus(ctx context.Context, ns, name string) (*corev1.PodStatus, error) {
	pod, err := a.GetPod(ctx, ns, name)
	if err != nil {
		return nil, err
	}
	return &pod.Status, nil
}

// GetPods are the node's Pods with their current statuses.
func (a *Agent) GetPods(ctx context.Context) ([]*corev1.Pod, error) {
	a.mu.Lock()
	ps := make([]*podRuntime, 0, len(a.pods))
	for _, p := range a.pods {
		ps = append(ps, p)
	}
	a.mu.Unlock()
	pods := make([]*corev1.Pod, 0, len(ps))
	for _, p := range ps {
		pods = append(pods, p.snapshot())
	}
	return pods, nil
}

// NotifyPods sets the function that is given a Pod whenever its status
// changes.
func (a *Agent) NotifyPods(ctx context.Context, f func(*corev1.Pod)) {
	a.mu.Lock()
	a.notify = f
	a.mu.Unlock()
}

func (a *Agent) get(ns, name string) *podRuntime {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.pods[podKey(ns, name)]
}

// notifyPod tells the pod controller the Pod's status changed.
func (a *Agent) notifyPod(p *podRuntime) {
	a.mu.Lock()
	f := a.notify
	a.mu.Unlock()
	if f != nil {
		f(p.snapshot())
	}
}

// mountpoint makes sure target exists on the host for a bind mount of src
// (a folder, or a file for a file), recording what it creates for
// cluster.Down.
func (a *Agent) mountpoint(src, target string) error {
	a.mountMu.Lock()
	defer a.mountMu.Unlock()
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	if _, err := os.Lstat(target); err == nil {
		return nil
	}
	// Record each folder we create, top first.
	var created []string
	for d := filepath.Dir(target); d != "/"; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil {
			break
		}
		created = append([]string{d}, created...)
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	if fi.IsDir() {
		err = os.Mkdir(target, 0o755)
	} else {
		var f *os.File
		f, err = os.OpenFile(target, os.O_CREATE|os.O_EXCL, 0o644)
		if f != nil {
			f.Close()
		}
	}
	if err != nil {
		return err
	}
	created = append(created, target)
	rec, err := os.OpenFile(a.mountpointsFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer rec.Close()
	for _, d := range created {
		if _, err := rec.WriteString(d + "\n"); err != nil {
			return err
		}
	}
	return nil
}
