package core

import (
	"net"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// EnvoyAddresses are where clients reach Envoy: the configured ones, then
// those of the Service in front of Envoy (its load balancer's when it has
// one, else its cluster IPs), without repeats, each an IP or a host name.
// Every Gateway reports them in status.addresses (but with
// gateway.servicePerGateway: ownAddresses) and every served root
// HTTPProxy in status.loadBalancer: one Envoy serves them all.
func EnvoyAddresses(snap *Snapshot) []corev1.LoadBalancerIngress {
	var l IngressList
	for _, a := range snap.Opts.EnvoyAddresses {
		l.Add(a)
	}
	if ns, name, ok := strings.Cut(snap.Opts.EnvoyService, "/"); ok {
		if svc := snap.Services[NsName(ns, name)]; svc != nil {
			ServiceAddresses(svc, l.Add)
		}
	}
	return l.Out
}

// IngressList gathers addresses without repeats.
type IngressList struct {
	Out  []corev1.LoadBalancerIngress
	seen map[string]bool
}

// Add adds an address, unless it is empty, None or there already.
func (l *IngressList) Add(a string) {
	if a == "" || a == corev1.ClusterIPNone || l.seen[a] {
		return
	}
	if l.seen == nil {
		l.seen = map[string]bool{}
	}
	l.seen[a] = true
	if net.ParseIP(a) != nil {
		l.Out = append(l.Out, corev1.LoadBalancerIngress{IP: a})
	} else {
		l.Out = append(l.Out, corev1.LoadBalancerIngress{Hostname: a})
	}
}

// ServiceAddresses are a Service's addresses for a Gateway's status: its
// load balancer's when it has one, else its cluster IPs.
func ServiceAddresses(svc *corev1.Service, add func(string)) {
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
