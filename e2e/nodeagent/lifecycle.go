package nodeagent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// minimumGrace is the kubelet's: a container always gets this long
// between SIGTERM and SIGKILL, even when its preStop hook used up the
// grace period.
const minimumGrace = 2 * time.Second

// terminationGrace is a Pod's grace period as the kubelet takes it: the
// deletion's, else the spec's, else 30 s.
func terminationGrace(pod *corev1.Pod) time.Duration {
	switch {
	case pod.DeletionGracePeriodSeconds != nil:
		return time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
	case pod.Spec.TerminationGracePeriodSeconds != nil:
		return time.Duration(*pod.Spec.TerminationGracePeriodSeconds) * time.Second
	}
	return 30 * time.Second
}

// graceAfterPreStop is how long SIGTERM is given before SIGKILL once a
// preStop hook took part of it: what is left, at least minimumGrace
// (the kubelet's arithmetic, to the nanosecond rather than in whole
// seconds).
func graceAfterPreStop(grace, took time.Duration) time.Duration {
	return max(grace-took, minimumGrace)
}

// terminate stops the container's running process as the kubelet's
// killContainer does: its preStop hook first (with hooks), for at most
// grace, then SIGTERM to its process group and SIGKILL once what is left
// of grace has passed. It returns when the process has exited. A
// container that is not running (waiting, exited) has nothing to stop.
//
// A run is stopped once, as the kubelet does: a second call while a stop
// is under way (a failed probe, then the Pod deleted) waits for it, and
// sends SIGKILL if its own grace period ends first.
func (c *container) terminate(grace time.Duration, hooks bool, why string) {
	c.p.mu.Lock()
	cmd, exited, done := c.cmd, c.exited, c.stopped
	if cmd == nil || cmd.Process == nil {
		c.p.mu.Unlock()
		return
	}
	first := done == nil
	if first {
		done = make(chan struct{})
		c.stopped = done
	}
	c.p.mu.Unlock()
	if !first {
		select {
		case <-done:
		case <-time.After(grace):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		return
	}
	defer close(done)
	a := c.p.a
	a.recorder.Eventf(c.p.pod, corev1.EventTypeNormal, "Killing", "%s", why)
	if lc := c.spec.Lifecycle; hooks && lc != nil && lc.PreStop != nil && grace > 0 {
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), grace)
		err := c.runHook(ctx, lc.PreStop)
		cancel()
		took := time.Since(start)
		if err != nil {
			// The event without the message, as the kubelet's: an exec
			// hook's output may hold secrets.
			a.recorder.Eventf(c.p.pod, corev1.EventTypeWarning, "FailedPreStopHook", "PreStopHook failed")
			slog.Warn("preStop hook failed", "pod", podKey(c.p.pod.Namespace, c.p.pod.Name), "container", c.spec.Name, "error", err)
		}
		grace = graceAfterPreStop(grace, took)
		slog.Info("preStop hook done", "pod", podKey(c.p.pod.Namespace, c.p.pod.Name), "container", c.spec.Name, "took", took, "grace left", grace)
	}
	select {
	case <-exited:
		return
	default:
	}
	pid := cmd.Process.Pid
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	select {
	case <-time.After(grace):
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		<-exited
	case <-exited:
	}
}

// postStart runs the container's postStart hook, if any, once its process
// has started; the hook ends if the process exits first. A failed hook
// kills the container (preStop hook, SIGTERM, SIGKILL after the Pod's
// grace period), which then restarts by the Pod's restart policy, as the
// kubelet does.
func (c *container) postStart(exited <-chan struct{}) {
	lc := c.spec.Lifecycle
	if lc == nil || lc.PostStart == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-exited:
			cancel()
		case <-ctx.Done():
		}
	}()
	err := c.runHook(ctx, lc.PostStart)
	if err == nil {
		return
	}
	a := c.p.a
	a.recorder.Eventf(c.p.pod, corev1.EventTypeWarning, "FailedPostStartHook", "PostStartHook failed")
	slog.Warn("postStart hook failed", "pod", podKey(c.p.pod.Namespace, c.p.pod.Name), "container", c.spec.Name, "error", err)
	go c.terminate(terminationGrace(c.p.pod), true, "FailedPostStartHook")
}

// runHook runs a lifecycle hook's handler as the kubelet does: exec in
// the container, an HTTP GET (to the Pod's address unless it names a
// host; any answer succeeds, as the kubelet's), or sleep; until ctx ends.
// tcpSocket, which the API keeps but the kubelet never ran, fails.
func (c *container) runHook(ctx context.Context, h *corev1.LifecycleHandler) error {
	switch {
	case h.Exec != nil:
		var out bytes.Buffer
		if err := c.exec(ctx, h.Exec.Command, &limitedWriter{w: &out, n: 4096}); err != nil {
			return fmt.Errorf("exec lifecycle hook (%v): %w, output %q", h.Exec.Command, err, out.String())
		}
		return nil
	case h.HTTPGet != nil:
		req, err := c.httpGetRequest(ctx, h.HTTPGet, "kube-lifecycle/1.37")
		if err != nil {
			return err
		}
		resp, err := probeClient.Do(req)
		if err != nil {
			return fmt.Errorf("HTTP lifecycle hook (%s): %w", h.HTTPGet.Path, err)
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		return resp.Body.Close()
	case h.Sleep != nil:
		select {
		case <-time.After(time.Duration(h.Sleep.Seconds) * time.Second):
			return nil
		case <-ctx.Done():
			return errors.New("container terminated before sleep hook finished")
		}
	}
	return fmt.Errorf("invalid lifecycle handler: only exec, httpGet and sleep run")
}

// limitedWriter keeps the first n bytes written to it and discards the
// rest (a hook's output in its error).
type limitedWriter struct {
	w io.Writer
	n int
}

func (l *limitedWriter) Write(b []byte) (int, error) {
	if l.n > 0 {
		k := min(len(b), l.n)
		l.n -= k
		if _, err := l.w.Write(b[:k]); err != nil {
			return 0, err
		}
	}
	return len(b), nil
}
