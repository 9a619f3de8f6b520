package builder

import (
	"net"
	"strings"

	corev1 "k8s.io/api/core/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// gatewayAddresses are where clients reach Envoy, reported in every
// Gateway's status.addresses: the configured ones, then those of the
// Service in front of Envoy (its load balancer's when it has one, else its
// cluster IPs), without repeats. All Gateways share one Envoy, so they
// share its addresses.
func gatewayAddresses(snap *snapshot) []gwapiv1.GatewayStatusAddress {
	var out []gwapiv1.GatewayStatusAddress
	seen := map[string]bool{}
	add := func(a string) {
		if a == "" || a == corev1.ClusterIPNone || seen[a] {
			return
		}
		seen[a] = true
		typ := gwapiv1.HostnameAddressType
		if net.ParseIP(a) != nil {
			typ = gwapiv1.IPAddressType
		}
		out = append(out, gwapiv1.GatewayStatusAddress{Type: &typ, Value: a})
	}
	for _, a := range snap.opts.GatewayAddresses {
		add(a)
	}
	if ns, name, ok := strings.Cut(snap.opts.GatewayEnvoyService, "/"); ok {
		if svc := snap.services[nn(ns, name)]; svc != nil {
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
	}
	return out
}
