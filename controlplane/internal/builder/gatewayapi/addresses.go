package gatewayapi

import (
	"fmt"

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

// addressesRefused says what of a Gateway's spec.addresses cannot be
// honoured ("" for nothing). An address without a value asks only for
// one of its type (GatewayAddressEmpty): every Gateway gets Envoy's, or
// its own Service's, so an IPAddress one is honoured, and status.addresses
// shows it (status.go: AddressNotAssigned while there is none). A value
// is a static address, which Envoy's Service decides, not the Gateway;
// other types are not assigned at all.
func addressesRefused(addrs []gwapiv1.GatewaySpecAddress) string {
	for i, a := range addrs {
		typ := gwapiv1.IPAddressType
		if a.Type != nil {
			typ = *a.Type
		}
		switch {
		case a.Value != "":
			return fmt.Sprintf("spec.addresses[%d]: a static address (%q) cannot be honoured: Envoy's addresses are those of its Service, not chosen per Gateway; leave value empty to have one assigned", i, a.Value)
		case typ != gwapiv1.IPAddressType:
			return fmt.Sprintf("spec.addresses[%d]: an address of type %q cannot be assigned: only IPAddress", i, typ)
		}
	}
	return ""
}

// wantsIP: spec.addresses asks for an IP address (an empty IPAddress).
func wantsIP(addrs []gwapiv1.GatewaySpecAddress) bool { return len(addrs) > 0 }

// hasIP: addresses hold an IP address.
func hasIP(addrs []gwapiv1.GatewayStatusAddress) bool {
	for _, a := range addrs {
		if a.Type == nil || *a.Type == gwapiv1.IPAddressType {
			return true
		}
	}
	return false
}
