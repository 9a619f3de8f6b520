package nodeagent

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// initSpec is what ContainerInit does before it becomes the container's
// program. The agent writes it to a file (mode 0600: it holds the env).
type initSpec struct {
	Hostname string      `json:"hostname"`
	Mounts   []initMount `json:"mounts"`
	Dir      string      `json:"dir"`
	Argv     []string    `json:"argv"`
	Env      []string    `json:"env"`
}

type initMount struct {
	Source   string `json:"source"`
	Target   string `json:"target"`
	ReadOnly bool   `json:"readOnly"`
}

// initCommand is how the agent starts a container's process: `ip netns
// exec` enters the Pod's network namespace and a new mount namespace (with
// / a slave of the host's, so mounts made in it stay there), then the
// agent's own executable runs ContainerInit there.
func initCommand(self, netns, specFile string) *exec.Cmd {
	return exec.Command("ip", "netns", "exec", netns, self, "container-init", specFile)
}

// ContainerInit runs in the Pod's network namespace and its own mount
// namespace: it bind-mounts the volumes at their mount paths (the program
// is not chrooted: it sees the host's files and, at each mount path, its
// volume), sets the Pod's host name in a UTS namespace of its own, and
// executes the program. It returns only on error.
func ContainerInit(specFile string) error {
	b, err := os.ReadFile(specFile)
	if err != nil {
		return err
	}
	var s initSpec
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	// Unshare and exec from one thread: namespaces are per thread here.
	runtime.LockOSThread()
	for _, m := range s.Mounts {
		if err := unix.Mount(m.Source, m.Target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind mount %s at %s: %w", m.Source, m.Target, err)
		}
		if m.ReadOnly {
			if err := unix.Mount("", m.Target, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_REC, ""); err != nil {
				return fmt.Errorf("read-only %s: %w", m.Target, err)
			}
		}
	}
	if s.Hostname != "" {
		if err := unix.Unshare(unix.CLONE_NEWUTS); err != nil {
			return fmt.Errorf("unshare UTS: %w", err)
		}
		if err := unix.Sethostname([]byte(s.Hostname)); err != nil {
			return fmt.Errorf("hostname: %w", err)
		}
	}
	if s.Dir != "" {
		if err := os.Chdir(s.Dir); err != nil {
			return err
		}
	}
	os.Remove(specFile)
	return syscall.Exec(s.Argv[0], s.Argv, s.Env)
}
