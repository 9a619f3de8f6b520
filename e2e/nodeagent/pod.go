package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// podRuntime is one Pod on the node: its network, volumes and containers.
type podRuntime struct {
	a   *Agent
	dir string

	mu         sync.Mutex
	pod        *corev1.Pod // spec as created, metadata as last updated
	net        *podNetwork
	startTime  metav1.Time
	containers []*container
	stopping   bool
	stopped    chan struct{} // closed when stop has finished
	wg         sync.WaitGroup
}

// start sets the Pod up: address and namespace, volumes, then each
// container's supervisor. An error before the containers leaves nothing
// behind (the pod controller retries).
func (a *Agent) startPod(ctx context.Context, pod *corev1.Pod) (_ *podRuntime, err error) {
	if len(pod.Spec.InitContainers) > 0 {
		return nil, errors.New("init containers are not supported by this node (docs/cluster.md)")
	}
	if pod.Spec.HostNetwork {
		return nil, errors.New("hostNetwork Pods are not supported by this node (docs/cluster.md)")
	}
	p := &podRuntime{a: a, pod: pod.DeepCopy(), dir: filepath.Join(a.cfg.DataDir, "pods", string(pod.UID)), stopped: make(chan struct{})}
	ip, err := a.ipam.allocate(string(pod.UID))
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			if p.net != nil {
				p.net.teardown()
			}
			a.ipam.release(ip)
			os.RemoveAll(p.dir)
		}
	}()
	if p.net, err = setupNetwork(string(pod.UID), ip, a.cfg); err != nil {
		return nil, err
	}
	p.startTime = metav1.Now()
	p.pod.Status.PodIP = ip
	p.pod.Status.PodIPs = []corev1.PodIP{{IP: ip}}
	p.pod.Status.HostIP = a.cfg.GatewayIP
	p.pod.Status.HostIPs = []corev1.HostIP{{IP: a.cfg.GatewayIP}}
	volumes, err := materialiseVolumes(ctx, a.client, p.pod, filepath.Join(p.dir, "volumes"))
	if err != nil {
		return nil, err
	}
	for i := range p.pod.Spec.Containers {
		c := &container{p: p, spec: &p.pod.Spec.Containers[i]}
		c.status = corev1.ContainerStatus{
			Name: c.spec.Name, Image: c.spec.Image,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}},
		}
		if err := c.prepare(ctx, volumes); err != nil {
			if errors.Is(err, errUnknownImage) {
				c.status.State.Waiting = &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: err.Error()}
				a.recorder.Eventf(pod, corev1.EventTypeWarning, "Failed", "Failed to pull image %q: %v", c.spec.Image, err)
				p.containers = append(p.containers, c)
				continue
			}
			if errors.Is(err, errContainerConfig) {
				c.status.State.Waiting = &corev1.ContainerStateWaiting{Reason: "CreateContainerConfigError", Message: err.Error()}
				a.recorder.Eventf(pod, corev1.EventTypeWarning, "Failed", "Error: %v", err)
				p.containers = append(p.containers, c)
				continue
			}
			return nil, fmt.Errorf("container %s: %w", c.spec.Name, err)
		}
		p.containers = append(p.containers, c)
	}
	for _, c := range p.containers {
		if c.argv != nil {
			p.wg.Add(1)
			go c.supervise()
		}
	}
	return p, nil
}

// stop terminates the containers (SIGTERM, SIGKILL after grace), then
// removes the Pod's network and files. It returns at once; stopped is
// closed when done.
func (p *podRuntime) stop(grace time.Duration) {
	p.mu.Lock()
	if p.stopping {
		p.mu.Unlock()
		return
	}
	p.stopping = true
	cs := p.containers
	p.mu.Unlock()
	for _, c := range cs {
		c.wake()
		c.kill(grace)
	}
	go func() {
		p.wg.Wait()
		p.net.teardown()
		p.a.ipam.release(p.net.ip)
		os.RemoveAll(p.dir)
		close(p.stopped)
		p.a.notifyPod(p)
	}()
}

func (p *podRuntime) isStopping() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stopping
}

// snapshot is the Pod with its current status.
func (p *podRuntime) snapshot() *corev1.Pod {
	p.mu.Lock()
	defer p.mu.Unlock()
	pod := p.pod.DeepCopy()
	pod.Status = p.statusLocked()
	return pod
}

// statusLocked is the Pod's status from its containers', as the kubelet
// reports it.
func (p *podRuntime) statusLocked() corev1.PodStatus {
	now := metav1.Now()
	st := corev1.PodStatus{
		PodIP: p.pod.Status.PodIP, PodIPs: p.pod.Status.PodIPs,
		HostIP: p.pod.Status.HostIP, HostIPs: p.pod.Status.HostIPs,
		StartTime: &p.startTime,
		QOSClass:  qosClass(p.pod),
	}
	allReady, running, waiting, terminated, failed := true, 0, 0, 0, 0
	for _, c := range p.containers {
		cs := *c.status.DeepCopy()
		cs.Ready = c.ready
		st.ContainerStatuses = append(st.ContainerStatuses, cs)
		if !c.ready {
			allReady = false
		}
		switch {
		case cs.State.Running != nil:
			running++
		case cs.State.Terminated != nil:
			terminated++
			if cs.State.Terminated.ExitCode != 0 {
				failed++
			}
		default:
			waiting++
		}
	}
	final := terminated == len(p.containers) && p.allDone()
	switch {
	case final && failed > 0:
		st.Phase = corev1.PodFailed
	case final:
		st.Phase = corev1.PodSucceeded
	case running > 0 || terminated > 0:
		st.Phase = corev1.PodRunning
	default:
		st.Phase = corev1.PodPending
	}
	select {
	case <-p.stopped:
		if st.Phase != corev1.PodSucceeded {
			st.Phase = corev1.PodFailed
		}
	default:
	}
	if st.Phase != corev1.PodRunning {
		allReady = false
	}
	cond := func(t corev1.PodConditionType, ok bool) corev1.PodCondition {
		s := corev1.ConditionFalse
		if ok {
			s = corev1.ConditionTrue
		}
		return corev1.PodCondition{Type: t, Status: s, LastTransitionTime: now}
	}
	st.Conditions = []corev1.PodCondition{
		cond(corev1.PodReadyToStartContainers, true),
		cond(corev1.PodInitialized, true),
		cond(corev1.ContainersReady, allReady),
		cond(corev1.PodReady, allReady),
		cond(corev1.PodScheduled, true),
	}
	return st
}

// allDone: every container has exited for good (no restart coming).
func (p *podRuntime) allDone() bool {
	for _, c := range p.containers {
		if !c.done {
			return false
		}
	}
	return true
}

func qosClass(pod *corev1.Pod) corev1.PodQOSClass {
	for _, c := range pod.Spec.Containers {
		if len(c.Resources.Requests) > 0 || len(c.Resources.Limits) > 0 {
			return corev1.PodQOSBurstable
		}
	}
	return corev1.PodQOSBestEffort
}

// nodeCapacity is what the node offers: enough for the tests' Pods; the
// node does not enforce limits.
func nodeCapacity() corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("32"),
		corev1.ResourceMemory:           resource.MustParse("64Gi"),
		corev1.ResourcePods:             resource.MustParse("250"),
		corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
	}
}

// hostname is the Pod's host name (at most 63 characters).
func hostname(pod *corev1.Pod) string {
	h := pod.Name
	if pod.Spec.Hostname != "" {
		h = pod.Spec.Hostname
	}
	if len(h) > 63 {
		h = strings.TrimRight(h[:63], "-.")
	}
	return h
}
