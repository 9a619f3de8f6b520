package gatewayapi

import (
	corev1 "k8s.io/api/core/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
)

// ownAddresses are a Gateway's addresses with gateway.servicePerGateway:
// those of its own Service, as the API server last showed it.
func (g *gatewayStage) ownAddresses(x *gwGateway) []gwapiv1.GatewayStatusAddress {
	var l core.IngressList
	if svc := g.R.Snap.Services[core.NsName(g.envoyNS, GatewayServiceName(core.NsName(x.gw.Namespace, x.gw.Name)))]; svc != nil {
		core.ServiceAddresses(svc, l.Add)
	}
	return gatewayAddresses(l.Out)
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
