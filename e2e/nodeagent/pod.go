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

	mu          sync.Mutex
	pod         *corev1.Pod // spec as created, metadata as last updated
	net         *podNetwork
	startTime   metav1.Time
	inits       []*container // init containers, run in order before containers
	initialised bool         // every init container has succeeded
	containers  []*container
	stopping    bool
	stopped     chan struct{} // closed when stop has finished
	wg          sync.WaitGroup
}

// start sets the Pod up: address and namespace, volumes, then each
// container's supervisor. An error before the containers leaves nothing
// behind (the pod controller retries).
func (a *Agent) startPod(ctx context.Context, pod *corev1.Pod) (_ *podRuntime, err error) {
	for _, ic := range pod.Spec.InitContainers {
		if ic.RestartPolicy != nil {
			return nil, fmt.Errorf("init container %s: sidecar containers (restartPolicy) are not supported by this node (docs/cluster.md)", ic.Name)
		}
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
			a.policies.podDown(pod.UID)
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
	// The NetworkPolicies that select it apply before anything listens.
	if err := a.policies.podUp(p.pod, ip); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return nil, err
	}
	if err := a.writeHosts(p); err != nil {
		return nil, err
	}
	volumes, err := materialiseVolumes(ctx, a.client, p.pod, filepath.Join(p.dir, "volumes"))
	if err != nil {
		return nil, err
	}
	// An image the node does not have leaves its container waiting with
	// ErrImagePull, a securityContext it cannot apply with
	// CreateContainerConfigError (and the Pod Pending), not a hang.
	prepare := func(spec *corev1.Container, init bool) (*container, error) {
		c := &container{p: p, spec: spec, init: init}
		waiting := "ContainerCreating"
		if len(p.pod.Spec.InitContainers) > 0 && !init {
			waiting = "PodInitializing"
		}
		c.status = corev1.ContainerStatus{
			Name: c.spec.Name, Image: c.spec.Image,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: waiting}},
		}
		if err := c.prepare(ctx, volumes); err != nil {
			if errors.Is(err, errUnknownImage) {
				c.status.State.Waiting = &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: err.Error()}
				a.recorder.Eventf(pod, corev1.EventTypeWarning, "Failed", "Failed to pull image %q: %v", c.spec.Image, err)
				return c, nil
			}
			if errors.Is(err, errContainerConfig) {
				c.status.State.Waiting = &corev1.ContainerStateWaiting{Reason: "CreateContainerConfigError", Message: err.Error()}
				a.recorder.Eventf(pod, corev1.EventTypeWarning, "Failed", "Error: %v", err)
				return c, nil
			}
			return nil, fmt.Errorf("container %s: %w", c.spec.Name, err)
		}
		return c, nil
	}
	for i := range p.pod.Spec.InitContainers {
		c, err := prepare(&p.pod.Spec.InitContainers[i], true)
		if err != nil {
			return nil, err
		}
		p.inits = append(p.inits, c)
	}
	for i := range p.pod.Spec.Containers {
		c, err := prepare(&p.pod.Spec.Containers[i], false)
		if err != nil {
			return nil, err
		}
		p.containers = append(p.containers, c)
	}
	p.wg.Add(1)
	go p.run()
	return p, nil
}

// run runs the init containers one after the other, each until it
// succeeds (a failed one restarts with back-off, unless the Pod's
// restartPolicy is Never: then the Pod fails), then starts the
// containers' supervisors.
func (p *podRuntime) run() {
	defer p.wg.Done()
	for _, c := range p.inits {
		if c.argv == nil {
			return // ErrImagePull: the Pod stays Pending
		}
		p.wg.Add(1)
		c.supervise()
		p.mu.Lock()
		ok := !p.stopping && c.status.State.Terminated != nil && c.status.State.Terminated.ExitCode == 0
		p.mu.Unlock()
		if !ok {
			return
		}
	}
	p.mu.Lock()
	if p.stopping {
		p.mu.Unlock()
		return
	}
	p.initialised = true
	p.mu.Unlock()
	// In order, as the kubelet: a container with a postStart hook holds
	// the next one back until the hook has run.
	for _, c := range p.containers {
		if c.argv == nil {
			continue
		}
		p.mu.Lock()
		if p.stopping {
			p.mu.Unlock()
			break
		}
		p.wg.Add(1)
		go c.supervise()
		p.mu.Unlock()
		if lc := c.spec.Lifecycle; lc != nil && lc.PostStart != nil {
			<-c.postStarted
		}
	}
	p.a.notifyPod(p)
}

// stop terminates the containers, each at once and on its own (with
// hooks, its preStop hook first; then SIGTERM, SIGKILL after what is left
// of grace), then removes the Pod's network and files. It returns at
// once; stopped is closed when done.
func (p *podRuntime) stop(grace time.Duration, hooks bool) {
	p.mu.Lock()
	if p.stopping {
		p.mu.Unlock()
		return
	}
	p.stopping = true
	cs := append(append([]*container(nil), p.inits...), p.containers...)
	p.mu.Unlock()
	for _, c := range cs {
		c.wake()
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			c.terminate(grace, hooks, "Stopping container "+c.spec.Name)
		}()
	}
	go func() {
		p.wg.Wait()
		p.net.teardown()
		p.a.policies.podDown(p.pod.UID)
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
	initFailed := false
	for _, c := range p.inits {
		cs := *c.status.DeepCopy()
		t := cs.State.Terminated
		cs.Ready = t != nil && t.ExitCode == 0
		st.InitContainerStatuses = append(st.InitContainerStatuses, cs)
		if c.done && (t == nil || t.ExitCode != 0) {
			initFailed = true
		}
	}
	allReady, running, waiting, terminated, failed := p.initialised, 0, 0, 0, 0
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
	case initFailed:
		st.Phase = corev1.PodFailed
	case !p.initialised:
		st.Phase = corev1.PodPending
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
		cond(corev1.PodInitialized, p.initialised),
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
