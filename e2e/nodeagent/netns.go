package nodeagent

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"sync"

	"github.com/portcullis/portcullis/e2e/cluster"
)

// ipam hands out the Pod CIDR's addresses (the first is the bridge's).
type ipam struct {
	mu   sync.Mutex
	base net.IP
	size int
	used map[int]string // offset -> pod key
	next int
}

func newIPAM(cidr string) (*ipam, error) {
	_, n, err := net.ParseCIDR(cidr)
	if err != nil {
		return nil, err
	}
	ones, bits := n.Mask.Size()
	return &ipam{base: n.IP.To4(), size: 1 << (bits - ones), used: map[int]string{}, next: 2}, nil
}

// allocate returns a free address, round-robin so a deleted Pod's address
// is not reused at once.
func (a *ipam) allocate(key string) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i := 0; i < a.size; i++ {
		off := 2 + (a.next-2+i)%(a.size-3) // skip network, bridge, broadcast
		if _, taken := a.used[off]; taken {
			continue
		}
		a.used[off] = key
		a.next = off + 1
		ip := make(net.IP, 4)
		copy(ip, a.base)
		v := uint32(ip[0])<<24 | uint32(ip[1])<<16 | uint32(ip[2])<<8 | uint32(ip[3])
		v += uint32(off)
		return net.IPv4(byte(v>>24), byte(v>>16), byte(v>>8), byte(v)).String(), nil
	}
	return "", fmt.Errorf("no free address in the Pod CIDR")
}

func (a *ipam) release(ip string) {
	p := net.ParseIP(ip).To4()
	if p == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	off := int(p[3]) - int(a.base[3]) + (int(p[2])-int(a.base[2]))*256
	delete(a.used, off)
}

// podNetwork is a Pod's network namespace and its veth on the bridge.
type podNetwork struct {
	netns string // ip netns name
	veth  string // host side
	ip    string
}

// netnsName names a Pod's namespace after its UID.
func netnsName(uid string) (netns, veth string) {
	h := sha256.Sum256([]byte(uid))
	s := hex.EncodeToString(h[:])
	// veth names are at most 15 characters.
	return cluster.NetnsPrefix + s[:12], cluster.VethPrefix + s[:10]
}

// setupNetwork creates the namespace with eth0 (ip/prefix, default route
// via the bridge) and lo, the host veth on the bridge in hairpin mode (a
// Pod reaching itself through a Service), and lets unprivileged users
// bind low ports as containerd does.
func setupNetwork(uid, ip string, cfg *cluster.NodeConfig) (*podNetwork, error) {
	netns, veth := netnsName(uid)
	n := &podNetwork{netns: netns, veth: veth, ip: ip}
	prefix := cfg.PodCIDR[strings.IndexByte(cfg.PodCIDR, '/'):]
	steps := [][]string{
		{"netns", "add", netns},
		{"link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", netns},
		{"link", "set", veth, "master", cfg.Bridge},
		{"link", "set", veth, "type", "bridge_slave", "hairpin", "on"},
		{"link", "set", veth, "up"},
		{"-n", netns, "addr", "add", ip + prefix, "dev", "eth0"},
		{"-n", netns, "link", "set", "eth0", "up"},
		{"-n", netns, "link", "set", "lo", "up"},
		{"-n", netns, "route", "add", "default", "via", cfg.GatewayIP},
		{"netns", "exec", netns, "sysctl", "-qw", "net.ipv4.ip_unprivileged_port_start=0"},
	}
	for _, s := range steps {
		if out, err := exec.Command("ip", s...).CombinedOutput(); err != nil {
			n.teardown()
			return nil, fmt.Errorf("ip %s: %v: %s", strings.Join(s, " "), err, strings.TrimSpace(string(out)))
		}
	}
	return n, nil
}

// teardown deletes the namespace (and with it both ends of the veth).
func (n *podNetwork) teardown() {
	_ = exec.Command("ip", "netns", "delete", n.netns).Run()
	_ = exec.Command("ip", "link", "delete", n.veth).Run()
}
