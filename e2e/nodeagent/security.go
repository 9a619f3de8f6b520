package nodeagent

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// errContainerConfig: the container asks for something this node cannot
// honour; it waits with CreateContainerConfigError, as the kubelet's.
var errContainerConfig = errors.New("this node cannot run the container as written")

// initSecurity is what ContainerInit applies of the securityContext before
// it executes the program.
type initSecurity struct {
	// UID, GID and Groups are the process's credentials when any is not
	// root's (nil: stays root).
	UID    *uint32  `json:"uid,omitempty"`
	GID    uint32   `json:"gid,omitempty"`
	Groups []uint32 `json:"groups,omitempty"`
	// DropCaps are capability numbers removed from every set, the
	// bounding one included.
	DropCaps   []int `json:"dropCaps,omitempty"`
	NoNewPrivs bool  `json:"noNewPrivs,omitempty"`
	// ReadOnlyRoot remounts / read-only in the container's mount
	// namespace (its volumes stay as mounted).
	ReadOnlyRoot bool `json:"readOnlyRoot,omitempty"`
}

// containerSecurity resolves the Pod's and the container's securityContext
// (the container's wins) with the image's user into what ContainerInit
// applies. A setting this node cannot apply is an errContainerConfig:
// the container never runs more openly than written.
func containerSecurity(pod *corev1.Pod, c *corev1.Container, imageUser string) (initSecurity, error) {
	var s initSecurity
	psc := pod.Spec.SecurityContext
	if psc == nil {
		psc = &corev1.PodSecurityContext{}
	}
	sc := c.SecurityContext
	if sc == nil {
		sc = &corev1.SecurityContext{}
	}
	refuse := func(what string) (initSecurity, error) {
		return initSecurity{}, fmt.Errorf("%w: %s is not supported (docs/cluster.md)", errContainerConfig, what)
	}
	switch {
	case psc.SELinuxOptions != nil || sc.SELinuxOptions != nil:
		return refuse("seLinuxOptions")
	case confined(psc.AppArmorProfile) || confined(sc.AppArmorProfile):
		return refuse("an appArmorProfile other than Unconfined")
	case localhost(psc.SeccompProfile) || localhost(sc.SeccompProfile):
		return refuse("a Localhost seccompProfile")
	case len(psc.Sysctls) > 0:
		return refuse("sysctls")
	case pod.Spec.HostUsers != nil && !*pod.Spec.HostUsers:
		return refuse("hostUsers: false (user namespaces)")
	}

	uid, gid, err := parseUser(imageUser)
	if err != nil {
		return initSecurity{}, err
	}
	if v := first(sc.RunAsUser, psc.RunAsUser); v != nil {
		uid = uint32(*v)
	}
	if v := first(sc.RunAsGroup, psc.RunAsGroup); v != nil {
		gid = uint32(*v)
	}
	for _, g := range psc.SupplementalGroups {
		s.Groups = append(s.Groups, uint32(g))
	}
	if psc.FSGroup != nil {
		s.Groups = append(s.Groups, uint32(*psc.FSGroup))
	}
	if v := first(sc.RunAsNonRoot, psc.RunAsNonRoot); v != nil && *v && uid == 0 {
		return initSecurity{}, fmt.Errorf("%w: container has runAsNonRoot and image will run as root", errContainerConfig)
	}
	if uid != 0 || gid != 0 || len(s.Groups) > 0 {
		s.UID, s.GID = &uid, gid
	}
	if sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
		s.NoNewPrivs = true
	}
	if sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem {
		s.ReadOnlyRoot = true
	}
	if sc.Capabilities != nil {
		if s.DropCaps, err = dropCaps(sc.Capabilities); err != nil {
			return initSecurity{}, err
		}
	}
	return s, nil
}

func first[T any](a, b *T) *T {
	if a != nil {
		return a
	}
	return b
}

func confined(p *corev1.AppArmorProfile) bool {
	return p != nil && p.Type != corev1.AppArmorProfileTypeUnconfined
}

func localhost(p *corev1.SeccompProfile) bool {
	return p != nil && p.Type == corev1.SeccompProfileTypeLocalhost
}

// parseUser reads an image's numeric USER, "uid" or "uid:gid" ("": root).
// A user name would need the image's /etc/passwd, which this node does
// not read.
func parseUser(user string) (uid, gid uint32, err error) {
	if user == "" {
		return 0, 0, nil
	}
	u, g, hasGroup := strings.Cut(user, ":")
	n, err := strconv.ParseUint(u, 10, 32)
	if err != nil {
		return 0, 0, fmt.Errorf("%w: the image's user %q is not numeric", errContainerConfig, user)
	}
	if !hasGroup {
		return uint32(n), 0, nil
	}
	m, err := strconv.ParseUint(g, 10, 32)
	if err != nil {
		return 0, 0, fmt.Errorf("%w: the image's group %q is not numeric", errContainerConfig, user)
	}
	return uint32(n), uint32(m), nil
}

// capNames are the Linux capabilities by number (CAP_LAST_CAP is 40).
var capNames = []string{
	"CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID", "SETPCAP",
	"LINUX_IMMUTABLE", "NET_BIND_SERVICE", "NET_BROADCAST", "NET_ADMIN", "NET_RAW", "IPC_LOCK", "IPC_OWNER",
	"SYS_MODULE", "SYS_RAWIO", "SYS_CHROOT", "SYS_PTRACE", "SYS_PACCT", "SYS_ADMIN", "SYS_BOOT", "SYS_NICE",
	"SYS_RESOURCE", "SYS_TIME", "SYS_TTY_CONFIG", "MKNOD", "LEASE", "AUDIT_WRITE", "AUDIT_CONTROL", "SETFCAP",
	"MAC_OVERRIDE", "MAC_ADMIN", "SYSLOG", "WAKE_ALARM", "BLOCK_SUSPEND", "AUDIT_READ", "PERFMON", "BPF",
	"CHECKPOINT_RESTORE",
}

// dropCaps is the capabilities dropped (ALL or named) less those added:
// a root process keeps every other one (this node runs containers with
// all of root's); a non-root process has none after setuid, so what it
// adds stays unused, as with the kubelet without ambient capabilities.
func dropCaps(c *corev1.Capabilities) ([]int, error) {
	index := func(name corev1.Capability) (int, error) {
		n := strings.TrimPrefix(strings.ToUpper(string(name)), "CAP_")
		for i, c := range capNames {
			if c == n {
				return i, nil
			}
		}
		return 0, fmt.Errorf("%w: unknown capability %q", errContainerConfig, name)
	}
	drop := map[int]bool{}
	for _, name := range c.Drop {
		if strings.EqualFold(string(name), "ALL") {
			for i := range capNames {
				drop[i] = true
			}
			continue
		}
		i, err := index(name)
		if err != nil {
			return nil, err
		}
		drop[i] = true
	}
	for _, name := range c.Add {
		if strings.EqualFold(string(name), "ALL") {
			clear(drop)
			continue
		}
		i, err := index(name)
		if err != nil {
			return nil, err
		}
		delete(drop, i)
	}
	var out []int
	for i := range capNames {
		if drop[i] {
			out = append(out, i)
		}
	}
	return out, nil
}
