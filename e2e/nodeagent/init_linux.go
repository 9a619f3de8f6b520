package nodeagent

import (
	"encoding/json"
	"errors"
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
	// Security is the securityContext, applied last.
	Security initSecurity `json:"security"`
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
	prog, err := applySecurity(s.Security, s.Argv[0])
	if err != nil {
		return err
	}
	return syscall.Exec(prog, s.Argv, s.Env)
}

// applySecurity applies the securityContext: / read-only (after the
// volumes' mounts, which stay as they are), capabilities dropped from the
// bounding set, the user's credentials, the rest of the dropped
// capabilities (a process that stays root), no_new_privs. It returns the
// path to execute: for another user, the program opened before the switch
// (its folders need not be searchable by that user, as in an image).
func applySecurity(s initSecurity, prog string) (string, error) {
	if s.ReadOnlyRoot {
		if err := unix.Mount("", "/", "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
			return "", fmt.Errorf("read-only root: %w", err)
		}
	}
	for _, c := range s.DropCaps {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			return "", fmt.Errorf("drop capability %d: %w", c, err)
		}
	}
	if s.UID != nil {
		// Not close-on-exec: a script's interpreter opens it by its
		// /proc/self/fd path.
		fd, err := unix.Open(prog, unix.O_PATH, 0)
		if err != nil {
			return "", err
		}
		groups := []int{int(s.GID)}
		for _, g := range s.Groups {
			groups = append(groups, int(g))
		}
		if err := syscall.Setgroups(groups); err != nil {
			return "", fmt.Errorf("setgroups: %w", err)
		}
		if err := syscall.Setgid(int(s.GID)); err != nil {
			return "", fmt.Errorf("setgid: %w", err)
		}
		if err := syscall.Setuid(int(*s.UID)); err != nil {
			return "", fmt.Errorf("setuid: %w", err)
		}
		prog = fmt.Sprintf("/proc/self/fd/%d", fd)
	}
	if len(s.DropCaps) > 0 {
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var data [2]unix.CapUserData
		if err := unix.Capget(&hdr, &data[0]); err != nil {
			return "", fmt.Errorf("capget: %w", err)
		}
		for _, c := range s.DropCaps {
			bit := uint32(1) << (c % 32)
			d := &data[c/32]
			d.Effective &^= bit
			d.Permitted &^= bit
			d.Inheritable &^= bit
		}
		if err := unix.Capset(&hdr, &data[0]); err != nil {
			return "", fmt.Errorf("capset: %w", err)
		}
	}
	if s.NoNewPrivs {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return "", fmt.Errorf("no_new_privs: %w", err)
		}
	}
	return prog, nil
}
