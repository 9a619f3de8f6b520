package builder

import (
	"net"
	"strings"

	corev1 "k8s.io/api/core/v1"
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

// serviceAddresses are a Service's addresses for a Gateway's status: its
// load balancer's when it has one, else its cluster IPs.
func serviceAddresses(svc *corev1.Service, add func(string)) {
	for _, in := range svc.Status.LoadBalancer.Ingress {
		add(in.IP)
		add(in.Hostname)
	}
	if len(svc.Status.LoadBalancer.Ingress) == 0 {
		for _, ip := range append([]string{svc.Spec.ClusterIP}, svc.Spec.ClusterIPs...) {
			add(ip)
		}
	}
}
