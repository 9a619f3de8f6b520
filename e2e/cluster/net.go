package cluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// sysctls are the settings the cluster needs: routing between the bridge
// and the host, and iptables (kube-proxy's DNAT) seeing bridged traffic,
// so a Pod reaching a Service backed by a Pod on the same bridge gets its
// replies translated back.
var sysctls = map[string]string{
	"net/ipv4/ip_forward":                "1",
	"net/bridge/bridge-nf-call-iptables": "1",
	"net/ipv4/conf/all/route_localnet":   "1",
}

// hostRules are the iptables rules Up adds (marked with RuleComment):
// Pods reach beyond the node masqueraded, and the bridge's traffic is
// forwarded whatever the FORWARD policy, once the NetworkPolicies' chain
// (PolicyChain, before the ACCEPTs) has let it through. A ClusterIP kube-proxy has not
// translated yet (a Service just created) is refused at once rather than
// sent out of the machine by the default route, where a network's proxy
// may answer it: a client connected then stays connected to that proxy.
var hostRules = [][]string{
	{"-t", "filter", "OUTPUT", "-d", ServiceCIDR, "-p", "tcp", "-j", "REJECT", "--reject-with", "tcp-reset"},
	{"-t", "filter", "OUTPUT", "-d", ServiceCIDR, "-j", "REJECT"},
	{"-t", "filter", "FORWARD", "-d", ServiceCIDR, "-p", "tcp", "-j", "REJECT", "--reject-with", "tcp-reset"},
	{"-t", "filter", "FORWARD", "-d", ServiceCIDR, "-j", "REJECT"},
	{"-t", "nat", "POSTROUTING", "-s", PodCIDR, "!", "-o", Bridge, "-j", "MASQUERADE"},
	{"-t", "filter", "FORWARD", "-o", Bridge, "-j", PolicyChain},
	{"-t", "filter", "FORWARD", "-i", Bridge, "-j", "ACCEPT"},
	{"-t", "filter", "FORWARD", "-o", Bridge, "-j", "ACCEPT"},
}

// setupHost creates the bridge, sets the sysctls (recording the values
// before in st) and adds the iptables rules.
func setupHost(st *state) error {
	for _, tool := range []string{"ip", "iptables", "iptables-restore", "conntrack"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s not found: the cluster needs iproute2, iptables and conntrack (make tools installs them)", tool)
		}
	}
	if os.Geteuid() != 0 {
		return errors.New("the cluster creates network namespaces, a bridge and iptables rules: run it as root")
	}
	st.Sysctls = map[string]string{}
	for k, v := range sysctls {
		p := filepath.Join("/proc/sys", k)
		old, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("sysctl %s: %w (for bridge-nf-call-iptables: modprobe br_netfilter)", k, err)
		}
		st.Sysctls[k] = strings.TrimSpace(string(old))
		if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
			return fmt.Errorf("sysctl %s=%s: %w", k, v, err)
		}
	}
	if err := run("ip", "link", "add", Bridge, "type", "bridge"); err != nil {
		return err
	}
	if err := run("ip", "addr", "add", GatewayIP+"/"+prefixLen(PodCIDR), "dev", Bridge); err != nil {
		return err
	}
	if err := run("ip", "link", "set", Bridge, "up"); err != nil {
		return err
	}
	// Empty until the node agent fills it.
	if err := run("iptables", "-t", "filter", "-N", PolicyChain); err != nil {
		return err
	}
	for _, r := range hostRules {
		args := append([]string{r[0], r[1], "-A", r[2]}, r[3:]...)
		args = append(args, "-m", "comment", "--comment", RuleComment)
		if err := run("iptables", args...); err != nil {
			return err
		}
	}
	return nil
}

// teardownHost removes what setupHost and the node agent created: the
// Pods' processes and network namespaces, the veths, the bridge, our
// iptables rules and chains (the NetworkPolicies'); it restores the
// sysctls recorded in st (when known). Every step runs even if an earlier
// one fails.
func teardownHost(st *state) []error {
	var errs []error
	// Pods' processes, then their namespaces (which removes their veths).
	if names, err := os.ReadDir("/run/netns"); err == nil {
		for _, n := range names {
			if !strings.HasPrefix(n.Name(), NetnsPrefix) {
				continue
			}
			killNetnsProcesses(n.Name())
			if err := run("ip", "netns", "delete", n.Name()); err != nil {
				errs = append(errs, err)
			}
		}
	}
	// ip netns made the folder; gone again if nobody else uses it.
	_ = os.Remove("/run/netns")
	if out, err := output("ip", "-o", "link", "show"); err == nil {
		for _, line := range strings.Split(out, "\n") {
			f := strings.Fields(line)
			if len(f) < 2 {
				continue
			}
			name := strings.SplitN(strings.TrimSuffix(f[1], ":"), "@", 2)[0]
			if strings.HasPrefix(name, VethPrefix) || name == Bridge {
				if err := run("ip", "link", "delete", name); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	for _, table := range []string{"nat", "filter"} {
		out, err := output("iptables", "-t", table, "-S")
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, line := range strings.Split(out, "\n") {
			if !strings.HasPrefix(line, "-A ") || !strings.Contains(line, RuleComment) {
				continue
			}
			args := append([]string{"-t", table, "-D"}, splitRule(line[3:])...)
			if err := run("iptables", args...); err != nil {
				errs = append(errs, err)
			}
		}
	}
	// The NetworkPolicies' chains, no longer referenced from FORWARD.
	if out, err := output("iptables", "-t", "filter", "-S"); err == nil {
		chains := PolicyChains(out)
		// Flushed first: the chains jump to one another.
		for _, op := range []string{"-F", "-X"} {
			for _, c := range chains {
				if err := run("iptables", "-t", "filter", op, c); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	if st != nil {
		for k, v := range st.Sysctls {
			if err := os.WriteFile(filepath.Join("/proc/sys", k), []byte(v), 0o644); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errs
}

// killNetnsProcesses kills every process in the named network namespace.
func killNetnsProcesses(netns string) {
	for i := 0; i < 50; i++ {
		out, err := output("ip", "netns", "pids", netns)
		if err != nil || strings.TrimSpace(out) == "" {
			return
		}
		for _, f := range strings.Fields(out) {
			if pid, err := strconv.Atoi(f); err == nil && pid > 1 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// splitRule splits an iptables -S line into arguments, keeping quoted
// strings (the comment) whole.
func splitRule(s string) []string {
	var args []string
	var cur strings.Builder
	quoted, any := false, false
	for _, r := range s {
		switch {
		case r == '"':
			quoted, any = !quoted, true
		case r == ' ' && !quoted:
			if any {
				args = append(args, cur.String())
				cur.Reset()
				any = false
			}
		default:
			cur.WriteRune(r)
			any = true
		}
	}
	if any {
		args = append(args, cur.String())
	}
	return args
}

func prefixLen(cidr string) string {
	if i := strings.IndexByte(cidr, '/'); i >= 0 {
		return cidr[i+1:]
	}
	return "32"
}
