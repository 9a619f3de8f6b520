package cluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// daemon starts a component detached from the caller (its own session, so
// it outlives `cluster up`), with its output in logs/NAME.log, and records
// its pid in pids/NN-NAME.pid; Down stops them in the reverse order.
func (c *cl) daemon(name, path string, args []string, extra ...*os.File) error {
	if err := os.MkdirAll(c.paths.Logs(), 0o755); err != nil {
		return err
	}
	if err := os.MkdirAll(c.paths.Pids(), 0o755); err != nil {
		return err
	}
	log, err := os.OpenFile(filepath.Join(c.paths.Logs(), name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	fmt.Fprintf(log, "--- cluster: starting %s %s\n", path, strings.Join(args, " "))
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Dir = c.paths.Dir
	cmd.ExtraFiles = extra
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	c.started++
	pidFile := filepath.Join(c.paths.Pids(), fmt.Sprintf("%02d-%s.pid", c.started, name))
	if err := os.WriteFile(pidFile, []byte(fmt.Sprintf("%d %s\n", cmd.Process.Pid, path)), 0o644); err != nil {
		return err
	}
	// Reap it if it exits while we are still around (a crash during Up),
	// and let poll know.
	exited := make(chan struct{})
	if c.exited == nil {
		c.exited = map[string]chan struct{}{}
	}
	c.exited[name] = exited
	go func() { _ = cmd.Wait(); close(exited) }()
	return nil
}

// logTail is the end of a component's log, for errors.
func (c *cl) logTail(name string) string {
	b, _ := os.ReadFile(filepath.Join(c.paths.Logs(), name+".log"))
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 30 {
		lines = lines[len(lines)-30:]
	}
	return strings.Join(lines, "\n")
}

// stopDaemons stops the recorded components, last started first: SIGTERM
// to the session's process group, SIGKILL after grace.
func stopDaemons(p Paths, grace time.Duration) {
	files, _ := filepath.Glob(filepath.Join(p.Pids(), "*.pid"))
	sort.Sort(sort.Reverse(sort.StringSlice(files)))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		fields := strings.Fields(string(b))
		if len(fields) != 2 {
			continue
		}
		pid, _ := strconv.Atoi(fields[0])
		if pid > 1 && isProcess(pid, fields[1]) {
			stopGroup(pid, grace)
		}
		os.Remove(f)
	}
}

// isProcess tells whether pid still runs the executable path (and is not
// a recycled pid).
func isProcess(pid int, path string) bool {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return false
	}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	return strings.TrimSuffix(exe, " (deleted)") == path
}

// stopGroup sends SIGTERM to the process group of pid, waits up to grace
// for pid to be gone, then SIGKILLs the group.
func stopGroup(pid int, grace time.Duration) {
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if !alive(pid) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	for i := 0; i < 100 && alive(pid); i++ {
		time.Sleep(20 * time.Millisecond)
	}
}

// alive: the process exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) STATE ...
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// run runs a host command (ip, iptables, sysctl), returning its output
// in the error.
func run(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func output(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		return "", fmt.Errorf("%s %s: %v", name, strings.Join(args, " "), err)
	}
	return string(out), nil
}
