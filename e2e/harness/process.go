package harness

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// stopGrace is how long Stop waits after SIGTERM before it sends SIGKILL.
const stopGrace = 10 * time.Second

// Process is a program started by a test, in its own process group, with
// stdout and stderr appended to LogPath. It is stopped when the test ends,
// and the tail of its log is printed if the test failed.
type Process struct {
	Name    string
	Path    string
	Args    []string
	Env     []string // extra KEY=VALUE pairs on top of the test's environment
	Dir     string   // working directory; empty means the test's
	LogPath string

	t    testing.TB
	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when the current run has exited
	err  error         // the current run's exit status, once done
}

// StartProcess starts path with args and fails the test if it cannot.
// Use NewProcess to set Env or Dir before starting.
func StartProcess(t testing.TB, name, path string, args ...string) *Process {
	t.Helper()
	p := NewProcess(t, name, path, args...)
	p.Start()
	return p
}

// NewProcess prepares a process without starting it; call Start.
func NewProcess(t testing.TB, name, path string, args ...string) *Process {
	t.Helper()
	p := &Process{
		Name:    name,
		Path:    path,
		Args:    args,
		LogPath: filepath.Join(t.TempDir(), name+".log"),
		t:       t,
	}
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("--- last lines of %s log (%s):\n%s", p.Name, p.LogPath, tail(p.Logs(), 60))
		}
	})
	return p
}

// Start starts the process; it fails the test if it is already running or
// cannot be started.
func (p *Process) Start() {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		p.t.Fatalf("%s: already running", p.Name)
	}
	log, err := os.OpenFile(p.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		p.t.Fatalf("%s: %v", p.Name, err)
	}
	cmd := exec.Command(p.Path, p.Args...)
	cmd.Env = append(os.Environ(), p.Env...)
	cmd.Dir = p.Dir
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = sysProcAttr()
	fmt.Fprintf(log, "--- harness: starting %s %s\n", p.Path, strings.Join(p.Args, " "))
	if err := cmd.Start(); err != nil {
		log.Close()
		p.t.Fatalf("%s: start %s: %v", p.Name, p.Path, err)
	}
	done := make(chan struct{})
	p.cmd, p.done = cmd, done
	go func() {
		err := cmd.Wait()
		// Anything the program left behind in its group goes with it.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		fmt.Fprintf(log, "--- harness: %s exited: %v\n", p.Name, exitString(err))
		log.Close()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(done)
	}()
}

// Stop sends SIGTERM to the process group, then SIGKILL if the process has
// not exited after a grace period. It is a no-op when nothing is running.
func (p *Process) Stop() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.cmd = nil
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	pgid := -cmd.Process.Pid
	_ = syscall.Kill(pgid, syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(stopGrace):
		_ = syscall.Kill(pgid, syscall.SIGKILL)
		<-done
	}
}

// Kill sends SIGKILL to the process group, as a crash or an OOM kill
// would, and waits until it has exited: nothing runs its shutdown. It is a
// no-op when nothing is running.
func (p *Process) Kill() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.cmd = nil
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-done
}

// Restart stops the process (if running) and starts it again with the same
// command line, appending to the same log.
func (p *Process) Restart() {
	p.t.Helper()
	p.Stop()
	p.Start()
}

// Done is closed when the current run of the process exits (on its own or
// by Stop). It is nil before the first Start.
func (p *Process) Done() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done
}

// ExitErr describes how the last run ended; nil while it is running or if
// it exited with status 0.
func (p *Process) ExitErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Pid is the process ID of the current run, 0 when not running (for
// benchmarks that read /proc/<pid>/stat).
func (p *Process) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Logs returns everything the process has written so far.
func (p *Process) Logs() string {
	b, _ := os.ReadFile(p.LogPath)
	return string(b)
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := bytes.Split([]byte(strings.TrimRight(s, "\n")), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

func exitString(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}
