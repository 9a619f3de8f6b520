package nodeagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The kubelet's restart back-off: 10 s doubling to 5 minutes, reset after
// 10 minutes of running.
const (
	backoffInitial = 10 * time.Second
	backoffMax     = 5 * time.Minute
	backoffReset   = 10 * time.Minute
)

// container is one container of a Pod and its supervisor's state; the
// fields below mu are guarded by the Pod's mutex.
type container struct {
	p    *podRuntime
	spec *corev1.Container
	init bool // an init container: runs to success before the containers

	argv     []string // resolved program and arguments; nil if it cannot run
	env      []string
	mounts   []initMount
	security initSecurity

	status corev1.ContainerStatus
	ready  bool
	done   bool // exited and will not restart
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has exited
	// stopped is closed when the stop of this run (terminate) is over;
	// nil until one begins.
	stopped chan struct{}
	wakeCh  chan struct{}
	once    sync.Once
	// postStarted is closed once the first run's postStart hook has run
	// (or the container will not run): the next container starts then.
	postStarted chan struct{}
	postOnce    sync.Once
}

// prepare resolves the container's image, program, environment and
// mounts.
func (c *container) prepare(ctx context.Context, volumes map[string]string) error {
	a := c.p.a
	im, err := a.images.get(c.spec.Image)
	if err != nil {
		return err
	}
	if c.security, err = containerSecurity(c.p.pod, c.spec, im.user); err != nil {
		return err
	}
	env, vals, err := containerEnv(ctx, a.client, c.p.pod, c.spec, im.env)
	if err != nil {
		return err
	}
	var argv []string
	switch {
	case len(c.spec.Command) > 0:
		argv = append(append(argv, c.spec.Command...), c.spec.Args...)
	case len(c.spec.Args) > 0:
		argv = append(append(argv, im.entrypoint...), c.spec.Args...)
	default:
		argv = append(append(argv, im.entrypoint...), im.cmd...)
	}
	if len(argv) == 0 {
		return fmt.Errorf("image %s has no entrypoint and the container no command", c.spec.Image)
	}
	for i := range argv {
		argv[i] = expand(argv[i], vals)
	}
	if argv[0], err = im.resolve(argv[0]); err != nil {
		return fmt.Errorf("%w: %v", errUnknownImage, err)
	}
	argv = append(append([]string{argv[0]}, im.args...), argv[1:]...)
	for _, vm := range c.spec.VolumeMounts {
		src, ok := volumes[vm.Name]
		if !ok {
			return fmt.Errorf("volumeMount %s: no such volume", vm.Name)
		}
		if vm.SubPath != "" {
			src = filepath.Join(src, vm.SubPath)
		}
		if vm.SubPathExpr != "" {
			return fmt.Errorf("volumeMount %s: subPathExpr is not supported by this node", vm.Name)
		}
		if err := a.mountpoint(src, vm.MountPath); err != nil {
			return fmt.Errorf("volumeMount %s: %w", vm.Name, err)
		}
		c.mounts = append(c.mounts, initMount{Source: src, Target: vm.MountPath, ReadOnly: vm.ReadOnly})
	}
	// The Pod's own /dev/shm, as its IPC namespace would give it: Envoys
	// of two Pods would otherwise share their hot-restart memory (base-id
	// 0) and the second would not start.
	shm := filepath.Join(c.p.dir, "shm")
	if err := os.MkdirAll(shm, 0o777); err != nil {
		return err
	}
	if err := os.Chmod(shm, 0o1777); err != nil {
		return err
	}
	c.mounts = append(c.mounts, initMount{Source: shm, Target: "/dev/shm"},
		initMount{Source: c.p.hostsFile(), Target: "/etc/hosts", ReadOnly: true})
	c.argv, c.env = argv, env
	c.wakeCh = make(chan struct{})
	c.postStarted = make(chan struct{})
	return nil
}

// supervise runs the container, restarting it as the Pod's restart policy
// says, with back-off, until it is done or the Pod stops.
func (c *container) supervise() {
	defer c.p.wg.Done()
	defer c.markPostStarted()
	a := c.p.a
	backoff := backoffInitial
	for {
		started := time.Now()
		exit, err := c.runOnce()
		if c.p.isStopping() {
			c.setDone()
			return
		}
		if err != nil {
			a.recorder.Eventf(c.p.pod, corev1.EventTypeWarning, "Failed", "Error: container %s: %v", c.spec.Name, err)
		}
		if !c.restarts(exit, err) {
			c.setDone()
			return
		}
		if time.Since(started) > backoffReset {
			backoff = backoffInitial
		}
		c.p.mu.Lock()
		c.status.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
			Reason:  "CrashLoopBackOff",
			Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s", backoff, c.spec.Name, c.p.pod.Name),
		}}
		c.p.mu.Unlock()
		a.notifyPod(c.p)
		a.recorder.Eventf(c.p.pod, corev1.EventTypeWarning, "BackOff", "Back-off restarting failed container %s in pod %s", c.spec.Name, c.p.pod.Name)
		select {
		case <-time.After(backoff):
		case <-c.wakeCh:
		}
		if c.p.isStopping() {
			c.setDone()
			return
		}
		backoff = min(2*backoff, backoffMax)
		c.p.mu.Lock()
		c.status.RestartCount++
		c.p.mu.Unlock()
	}
}

func (c *container) restarts(exit int, err error) bool {
	if c.init {
		// Until it succeeds, unless the Pod never restarts anything.
		return (exit != 0 || err != nil) && c.p.pod.Spec.RestartPolicy != corev1.RestartPolicyNever
	}
	switch c.p.pod.Spec.RestartPolicy {
	case corev1.RestartPolicyNever:
		return false
	case corev1.RestartPolicyOnFailure:
		return exit != 0 || err != nil
	}
	return true
}

func (c *container) setDone() {
	c.p.mu.Lock()
	c.done = true
	c.ready = false
	c.p.mu.Unlock()
	c.p.a.notifyPod(c.p)
}

// wake ends a back-off wait (the Pod is stopping).
func (c *container) wake() {
	if c.wakeCh != nil {
		c.once.Do(func() { close(c.wakeCh) })
	}
}

func (c *container) markPostStarted() {
	c.postOnce.Do(func() { close(c.postStarted) })
}

// runOnce starts the process, runs its probes, and waits for it to exit.
func (c *container) runOnce() (exit int, err error) {
	a := c.p.a
	logPath, err := c.rotateLog()
	if err != nil {
		return -1, err
	}
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return -1, err
	}
	defer log.Close()
	cmd, err := c.command(c.argv, log)
	if err != nil {
		return -1, err
	}
	c.p.mu.Lock()
	if c.p.stopping {
		c.p.mu.Unlock()
		return -1, nil
	}
	if err := cmd.Start(); err != nil {
		c.p.mu.Unlock()
		c.terminated(-1, "StartError", err.Error(), time.Now())
		return -1, err
	}
	now := metav1.Now()
	c.cmd, c.exited, c.stopped = cmd, make(chan struct{}), nil
	exited := c.exited
	c.status.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}
	c.status.ContainerID = fmt.Sprintf("portcullis://%s-%d", c.p.pod.UID, cmd.Process.Pid)
	c.status.ImageID = c.spec.Image
	started := c.spec.StartupProbe == nil
	c.status.Started = &started
	c.ready = c.spec.ReadinessProbe == nil && started
	c.p.mu.Unlock()
	a.notifyPod(c.p)
	a.recorder.Eventf(c.p.pod, corev1.EventTypeNormal, "Started", "Started container %s", c.spec.Name)

	var werr error
	go func() {
		werr = cmd.Wait()
		close(exited)
	}()
	// The probes start once the postStart hook has run.
	c.postStart(exited)
	c.markPostStarted()
	ctx, cancel := context.WithCancel(context.Background())
	go c.probes(ctx)
	<-exited
	cancel()
	c.p.mu.Lock()
	c.cmd = nil
	c.p.mu.Unlock()
	exit = cmd.ProcessState.ExitCode()
	reason := "Completed"
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		exit = 128 + int(ws.Signal())
	}
	if exit != 0 {
		reason = "Error"
	}
	c.terminated(exit, reason, "", now.Time)
	var ee *exec.ExitError
	if werr != nil && !errors.As(werr, &ee) {
		return exit, werr
	}
	return exit, nil
}

func (c *container) terminated(exit int, reason, msg string, startedAt time.Time) {
	c.p.mu.Lock()
	t := &corev1.ContainerStateTerminated{ExitCode: int32(exit), Reason: reason, Message: msg,
		StartedAt: metav1.NewTime(startedAt), FinishedAt: metav1.Now(), ContainerID: c.status.ContainerID}
	c.status.State = corev1.ContainerState{Terminated: t}
	c.status.LastTerminationState = corev1.ContainerState{Terminated: t.DeepCopy()}
	c.ready = false
	f := false
	c.status.Started = &f
	c.p.mu.Unlock()
	c.p.a.notifyPod(c.p)
}

// command is the process of argv in the container's namespaces and
// mounts, in its own process group.
func (c *container) command(argv []string, out io.Writer) (*exec.Cmd, error) {
	spec := initSpec{Hostname: hostname(c.p.pod), Mounts: c.mounts, Dir: c.workingDir(), Argv: argv, Env: c.env, Security: c.security}
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(c.p.dir, "init-*.json")
	if err != nil {
		return nil, err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return nil, err
	}
	f.Close()
	cmd := initCommand(c.p.a.cfg.Self, c.p.net.netns, f.Name())
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	return cmd, nil
}

// workingDir is the container's workingDir if it exists on the host, else
// the Pod's folder (the image's own folders are not there: no chroot).
func (c *container) workingDir() string {
	if c.spec.WorkingDir != "" {
		if fi, err := os.Stat(c.spec.WorkingDir); err == nil && fi.IsDir() {
			return c.spec.WorkingDir
		}
	}
	return c.p.dir
}

// logPath is the current run's log; previous is the run before.
func (c *container) logPath(previous bool) string {
	name := c.spec.Name + ".log"
	if previous {
		name = c.spec.Name + ".previous.log"
	}
	return filepath.Join(c.p.dir, "logs", name)
}

// rotateLog keeps the last run's log as the previous one.
func (c *container) rotateLog() (string, error) {
	cur := c.logPath(false)
	if err := os.MkdirAll(filepath.Dir(cur), 0o755); err != nil {
		return "", err
	}
	if _, err := os.Stat(cur); err == nil {
		if err := os.Rename(cur, c.logPath(true)); err != nil {
			return "", err
		}
	}
	return cur, nil
}
