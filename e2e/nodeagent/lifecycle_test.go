package nodeagent

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
)

func TestGraceAfterPreStop(t *testing.T) {
	for _, tc := range []struct {
		grace, took, want time.Duration
	}{
		{60 * time.Second, 30 * time.Second, 30 * time.Second},
		{60 * time.Second, 100 * time.Millisecond, 59900 * time.Millisecond},
		{10 * time.Second, 9 * time.Second, 2 * time.Second},  // the kubelet's minimum
		{10 * time.Second, 10 * time.Second, 2 * time.Second}, // the hook used it all
		{0, 0, 2 * time.Second},
	} {
		if got := graceAfterPreStop(tc.grace, tc.took); got != tc.want {
			t.Errorf("graceAfterPreStop(%s, %s) = %s, want %s", tc.grace, tc.took, got, tc.want)
		}
	}
}

func TestTerminationGrace(t *testing.T) {
	for _, tc := range []struct {
		name           string
		deletion, spec *int64
		want           time.Duration
	}{
		{"default", nil, nil, 30 * time.Second},
		{"the spec's", nil, ptr.To[int64](60), 60 * time.Second},
		{"the deletion's over the spec's", ptr.To[int64](5), ptr.To[int64](60), 5 * time.Second},
		{"a deletion without grace", ptr.To[int64](0), ptr.To[int64](60), 0},
	} {
		pod := &corev1.Pod{}
		pod.DeletionGracePeriodSeconds = tc.deletion
		pod.Spec.TerminationGracePeriodSeconds = tc.spec
		if got := terminationGrace(pod); got != tc.want {
			t.Errorf("%s: terminationGrace = %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestTerminate stops real processes as a deleted Pod's containers: the
// preStop hook runs first while the process keeps running, then SIGTERM,
// then SIGKILL once what is left of the grace period (at least 2 s) has
// passed.
func TestTerminate(t *testing.T) {
	hook := struct {
		sync.Mutex
		at        time.Time
		userAgent string
	}{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hook.Lock()
		defer hook.Unlock()
		if r.URL.Path == "/prestop" {
			hook.at, hook.userAgent = time.Now(), r.UserAgent()
		}
		w.WriteHeader(http.StatusInternalServerError) // the kubelet does not look at the status
	}))
	t.Cleanup(srv.Close) // the subtests run in parallel, after this function returned
	port := srv.Listener.Addr().(*net.TCPAddr).Port

	const (
		exits   = "sleep 100"                                 // SIGTERM ends it
		ignores = `trap "" TERM; while :; do sleep 0.1; done` // only SIGKILL ends it
	)
	sleep := func(s int64) *corev1.Lifecycle {
		return &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: s}}}
	}
	tests := []struct {
		name      string
		script    string
		lifecycle *corev1.Lifecycle
		grace     time.Duration
		hooks     bool
		// The process exits by signal after at least min, less than max.
		signal   syscall.Signal
		min, max time.Duration
		events   []string
	}{
		{name: "no hook: SIGTERM at once", script: exits, grace: 10 * time.Second, hooks: true,
			signal: syscall.SIGTERM, max: time.Second, events: []string{"Normal Killing stop"}},
		{name: "hooks off (the agent stopping)", script: exits, lifecycle: sleep(5), grace: 10 * time.Second,
			signal: syscall.SIGTERM, max: time.Second},
		{name: "preStop sleep, then SIGTERM", script: exits, lifecycle: sleep(1), grace: 10 * time.Second, hooks: true,
			signal: syscall.SIGTERM, min: time.Second, max: 2500 * time.Millisecond},
		{name: "SIGKILL once what the hook left of grace is over", script: ignores, lifecycle: sleep(1), grace: 3500 * time.Millisecond, hooks: true,
			signal: syscall.SIGKILL, min: 3500 * time.Millisecond, max: 5 * time.Second},
		{name: "a hook longer than grace is cut, then 2 s to SIGKILL", script: ignores, lifecycle: sleep(30), grace: time.Second, hooks: true,
			signal: syscall.SIGKILL, min: 3 * time.Second, max: 4500 * time.Millisecond,
			events: []string{"Normal Killing stop", "Warning FailedPreStopHook PreStopHook failed"}},
		{name: "preStop httpGet, then SIGTERM", script: exits, grace: 10 * time.Second, hooks: true,
			lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{
				Host: "127.0.0.1", Port: intstr.FromString("hook"), Path: "/prestop"}}},
			signal: syscall.SIGTERM, max: time.Second},
		{name: "tcpSocket is not run: an event, SIGTERM", script: exits, grace: 10 * time.Second, hooks: true,
			lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(1)}}},
			signal:    syscall.SIGTERM, max: time.Second,
			events: []string{"Normal Killing stop", "Warning FailedPreStopHook PreStopHook failed"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := record.NewFakeRecorder(10)
			c := &container{p: testPod(rec), spec: &corev1.Container{Name: "c", Lifecycle: tc.lifecycle,
				Ports: []corev1.ContainerPort{{Name: "hook", ContainerPort: int32(port)}}}}
			cmd, exited, exitedAt := startRun(t, c, tc.script)
			time.Sleep(200 * time.Millisecond) // the shell's trap in place
			start := time.Now()
			c.terminate(tc.grace, tc.hooks, "stop")
			select {
			case <-exited:
			default:
				t.Fatal("terminate returned before the process exited")
			}
			took := (*exitedAt).Sub(start)
			ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
			if !ws.Signaled() || ws.Signal() != tc.signal {
				t.Errorf("process ended %v, want by %v", cmd.ProcessState, tc.signal)
			}
			if took < tc.min || took >= tc.max {
				t.Errorf("process exited after %s, want in [%s, %s)", took, tc.min, tc.max)
			}
			close(rec.Events)
			var events []string
			for e := range rec.Events {
				events = append(events, e)
			}
			if tc.events != nil && strings.Join(events, "; ") != strings.Join(tc.events, "; ") {
				t.Errorf("events %q, want %q", events, tc.events)
			}
			if tc.lifecycle != nil && tc.lifecycle.PreStop.HTTPGet != nil {
				hook.Lock()
				at, ua := hook.at, hook.userAgent
				hook.Unlock()
				if at.IsZero() || at.After(*exitedAt) || !strings.HasPrefix(ua, "kube-lifecycle/") {
					t.Errorf("preStop GET /prestop at %v (User-Agent %q), process exited at %v: want the GET first, as kube-lifecycle", at, ua, *exitedAt)
				}
			}
		})
	}
}

// TestLivenessFailureTerminates: a container failing its liveness probe is
// stopped as the kubelet does it: its preStop hook, then SIGTERM, with an
// event saying why (it then restarts by the Pod's policy).
func TestLivenessFailureTerminates(t *testing.T) {
	var mu sync.Mutex
	var preStopAt time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/prestop" {
			mu.Lock()
			preStopAt = time.Now()
			mu.Unlock()
		}
		w.WriteHeader(http.StatusInternalServerError) // /healthz: not alive
	}))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port

	rec := record.NewFakeRecorder(10)
	p := testPod(rec)
	p.pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](10)
	get := func(path string) *corev1.HTTPGetAction {
		return &corev1.HTTPGetAction{Host: "127.0.0.1", Port: intstr.FromInt32(int32(port)), Path: path}
	}
	c := &container{p: p, spec: &corev1.Container{Name: "c",
		LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: get("/healthz")}, PeriodSeconds: 1, FailureThreshold: 1},
		Lifecycle:     &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{HTTPGet: get("/prestop")}}}}
	cmd, exited, exitedAt := startRun(t, c, "sleep 100")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go c.probes(ctx)
	select {
	case <-exited:
	case <-time.After(20 * time.Second):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		t.Fatal("the container failing its liveness probe was not stopped")
	}
	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Errorf("process ended %v, want by SIGTERM", cmd.ProcessState)
	}
	mu.Lock()
	at := preStopAt
	mu.Unlock()
	if at.IsZero() || at.After(*exitedAt) {
		t.Errorf("preStop hook at %v, process exited at %v: want the hook first", at, *exitedAt)
	}
	want := []string{"Warning Unhealthy Liveness probe failed: HTTP probe failed with statuscode: 500",
		"Normal Killing Container c failed liveness probe, will be restarted"}
	for _, w := range want {
		select {
		case e := <-rec.Events:
			if e != w {
				t.Errorf("event %q, want %q", e, w)
			}
		default:
			t.Errorf("no event %q", w)
		}
	}
}

// TestTerminateOnce: two stops of one run at once (a failed probe, then
// the Pod deleted) stop it once: one preStop hook, one Killing event, and
// both return once the process has exited.
func TestTerminateOnce(t *testing.T) {
	var hooks atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hooks.Add(1)
		time.Sleep(500 * time.Millisecond) // the second stop comes during the hook
	}))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port

	rec := record.NewFakeRecorder(10)
	c := &container{p: testPod(rec), spec: &corev1.Container{Name: "c", Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{
		HTTPGet: &corev1.HTTPGetAction{Host: "127.0.0.1", Port: intstr.FromInt32(int32(port)), Path: "/prestop"}}}}}
	cmd, exited, _ := startRun(t, c, "sleep 100")
	var wg sync.WaitGroup
	for _, why := range []string{"probe", "deleted"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.terminate(10*time.Second, true, why)
			select {
			case <-exited:
			default:
				t.Errorf("%s: terminate returned before the process exited", why)
			}
		}()
		time.Sleep(100 * time.Millisecond)
	}
	wg.Wait()
	if n := hooks.Load(); n != 1 {
		t.Errorf("the preStop hook ran %d times, want once", n)
	}
	if ws := cmd.ProcessState.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Errorf("process ended %v, want by SIGTERM", cmd.ProcessState)
	}
	close(rec.Events)
	var events []string
	for e := range rec.Events {
		events = append(events, e)
	}
	if len(events) != 1 || events[0] != "Normal Killing probe" {
		t.Errorf("events %q, want one: Normal Killing probe", events)
	}
}

// testPod is a Pod's runtime at 127.0.0.1 whose events go to rec.
func testPod(rec *record.FakeRecorder) *podRuntime {
	p := &podRuntime{a: &Agent{recorder: rec}, pod: &corev1.Pod{}}
	p.pod.Name, p.pod.Namespace = "pod", "ns"
	p.pod.Status.PodIP = "127.0.0.1"
	return p
}

// startRun starts script, in a process group of its own, as c's running
// process (c.cmd, c.exited). *exitedAt is when it exited, once exited is
// closed.
func startRun(t *testing.T, c *container, script string) (cmd *exec.Cmd, exited chan struct{}, exitedAt *time.Time) {
	t.Helper()
	cmd = exec.Command("sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited, exitedAt = make(chan struct{}), new(time.Time)
	go func() {
		_ = cmd.Wait()
		*exitedAt = time.Now()
		close(exited)
	}()
	c.cmd, c.exited = cmd, exited
	return cmd, exited, exitedAt
}
