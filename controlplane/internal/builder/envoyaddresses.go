package builder

import (
	"net"
	"strings"

	corev1 "k8s.io/api/core/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// envoyAddresses are where clients reach Envoy: the configured ones, then
// those of the Service in front of Envoy (its load balancer's when it has
// one, else its cluster IPs), without repeats, each an IP or a host name.
// Every Gateway reports them in status.addresses (but with
// gateway.servicePerGateway: ownAddresses) and every served root
// HTTPProxy in status.loadBalancer: one Envoy serves them all.
func envoyAddresses(snap *snapshot) []corev1.LoadBalancerIngress {
	var l ingressList
	for _, a := range snap.opts.EnvoyAddresses {
		l.add(a)
	}
	if ns, name, ok := strings.Cut(snap.opts.EnvoyService, "/"); ok {
		if svc := snap.services[nn(ns, name)]; svc != nil {
			serviceAddresses(svc, l.add)
		}
	}
	return l.out
}

// ownAddresses are a Gateway's addresses with gateway.servicePerGateway:
// those of its own Service, as the API server last showed it.
func (g *gatewayStage) ownAddresses(x *gwGateway) []gwapiv1.GatewayStatusAddress {
	var l ingressList
	if svc := g.r.snap.services[nn(g.envoyNS, gatewayServiceName(nn(x.gw.Namespace, x.gw.Name)))]; svc != nil {
		serviceAddresses(svc, l.add)
	}
	return gatewayAddresses(l.out)
}

// gatewayAddresses are addresses as a Gateway's status.addresses.
func gatewayAddresses(addrs []corev1.LoadBalancerIngress) []gwapiv1.GatewayStatusAddress {
	var out []gwapiv1.GatewayStatusAddress
	for _, a := range addrs {
		typ, v := gwapiv1.IPAddressType, a.IP
		if v == "" {
			typ, v = gwapiv1.HostnameAddressType, a.Hostname
		}
		out = append(out, gwapiv1.GatewayStatusAddress{Type: &typ, Value: v})
	}
	return out
}

// ingressList gathers addresses without repeats.
type ingressList struct {
	out  []corev1.LoadBalancerIngress
	seen map[string]bool
}

func (l *ingressList) add(a string) {
	if a == "" || a == corev1.ClusterIPNone || l.seen[a] {
		return
	}
	if l.seen == nil {
		l.seen = map[string]bool{}
	}
	l.seen[a] = true
	if net.ParseIP(a) != nil {
		l.out = append(l.out, corev1.LoadBalancerIngress{IP: a})
	} else {
		l.out = append(l.out, corev1.LoadBalancerIngress{Hostname: a})
	}
}
