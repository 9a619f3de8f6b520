package guard

import (
	"fmt"
	"net"
	"net/netip"
	"strings"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
)

// OwnAddresses are this host's addresses (the control plane's, and
// Envoy's when they share a host or a pod).
func OwnAddresses() []netip.Addr {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var out []netip.Addr
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			out = append(out, p.Addr())
		}
	}
	return out
}

// local says why addr is the host itself or its link, or "".
func local(addr *corev3.Address, own []netip.Addr) string {
	if addr.GetPipe() != nil {
		return "a Unix socket"
	}
	if addr.GetEnvoyInternalAddress() != nil {
		return "an Envoy internal listener"
	}
	host := addr.GetSocketAddress().GetAddress()
	ip, err := netip.ParseAddr(host)
	if err != nil {
		if h := strings.ToLower(strings.TrimSuffix(host, ".")); h == "localhost" || strings.HasSuffix(h, ".localhost") {
			return "localhost"
		}
		return ""
	}
	ip = ip.Unmap()
	switch {
	case ip.IsLoopback():
		return "a loopback address"
	case ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast():
		return "a link-local address (cloud metadata services live there)"
	case ip.IsUnspecified():
		return "the unspecified address"
	}
	for _, o := range own {
		if o.Unmap() == ip {
			return "an address of the control plane's own host"
		}
	}
	return ""
}

// CheckEndpoints refuses clusters that send to the host itself: loopback,
// link-local, Unix sockets, internal listeners, the host's own addresses,
// or wherever the request says (an original-destination cluster that
// takes a header).
func CheckEndpoints(clusters []*clusterv3.Cluster, own []netip.Addr) []Violation {
	var out []Violation
	for _, c := range clusters {
		bad := func(format string, args ...any) {
			out = append(out, Violation{TypeURL: resourcev3.ClusterType, Name: c.GetName(), Reason: fmt.Sprintf(format, args...)})
		}
		if c.GetType() == clusterv3.Cluster_ORIGINAL_DST && c.GetOriginalDstLbConfig().GetUseHttpHeader() {
			bad("an original-destination cluster that takes its destination from a request header reaches any address")
		}
		for _, v := range CheckLoadAssignment(c.GetLoadAssignment(), own) {
			v.TypeURL, v.Name = resourcev3.ClusterType, c.GetName()
			out = append(out, v)
		}
	}
	return out
}

// CheckLoadAssignment refuses endpoints on the host itself, as
// CheckEndpoints does.
func CheckLoadAssignment(cla *endpointv3.ClusterLoadAssignment, own []netip.Addr) []Violation {
	var out []Violation
	for _, le := range cla.GetEndpoints() {
		for _, e := range le.GetLbEndpoints() {
			addr := e.GetEndpoint().GetAddress()
			if why := local(addr, own); why != "" {
				out = append(out, Violation{TypeURL: resourcev3.EndpointType, Name: cla.GetClusterName(), Reason: fmt.Sprintf("endpoint %s is %s", addrString(addr), why)})
			}
		}
	}
	return out
}

func addrString(a *corev3.Address) string {
	if s := a.GetSocketAddress(); s != nil {
		return net.JoinHostPort(s.GetAddress(), fmt.Sprint(s.GetPortValue()))
	}
	return a.String()
}
