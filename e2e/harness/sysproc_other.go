//go:build !linux

package harness

import "syscall"

// sysProcAttr puts a child in its own process group so Stop reaches its
// children too.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
