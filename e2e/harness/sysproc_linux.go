package harness

import "syscall"

// sysProcAttr puts a child in its own process group (so Stop reaches its
// children too) and kills it if the test binary dies first.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
