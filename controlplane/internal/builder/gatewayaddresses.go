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
// share its addresses (but with gateway.servicePerGateway: ownAddresses).
func gatewayAddresses(snap *snapshot) []gwapiv1.GatewayStatusAddress {
	var l addressList
	for _, a := range snap.opts.GatewayAddresses {
		l.add(a)
	}
	if ns, name, ok := strings.Cut(snap.opts.GatewayEnvoyService, "/"); ok {
		if svc := snap.services[nn(ns, name)]; svc != nil {
			serviceAddresses(svc, l.add)
		}
	}
	return l.out
}

// ownAddresses are a Gateway's addresses with gateway.servicePerGateway:
// those of its own Service, as the API server last showed it.
func (g *gatewayStage) ownAddresses(x *gwGateway) []gwapiv1.GatewayStatusAddress {
	var l addressList
	if svc := g.r.snap.services[nn(g.envoyNS, gatewayServiceName(nn(x.gw.Namespace, x.gw.Name)))]; svc != nil {
		serviceAddresses(svc, l.add)
	}
	return l.out
}

// addressList gathers status addresses without repeats.
type addressList struct {
	out  []gwapiv1.GatewayStatusAddress
	seen map[string]bool
}

func (l *addressList) add(a string) {
	if a == "" || a == corev1.ClusterIPNone || l.seen[a] {
		return
	}
	if l.seen == nil {
		l.seen = map[string]bool{}
	}
	l.seen[a] = true
	typ := gwapiv1.HostnameAddressType
	if net.ParseIP(a) != nil {
		typ = gwapiv1.IPAddressType
	}
	l.out = append(l.out, gwapiv1.GatewayStatusAddress{Type: &typ, Value: a})
}
