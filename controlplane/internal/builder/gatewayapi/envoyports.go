package gatewayapi

import (
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// separatedPortOffset moves a listener off the Envoy port of a privileged
// port: 80 is served on 8080, so a listener on port 8080 is served on
// 18080 (8000 to 9023 become 18000 to 19023).
const separatedPortOffset = 10000

// separatePorts keeps listeners that differ in port apart in the shared
// mode, as the API says they are distinct: a listener whose own port is
// the Envoy port of another listener's privileged port (any Gateway's: one
// Envoy serves them all) moves to its port + separatedPortOffset. Without
// a privileged port on that Envoy port nothing moves. All our Gateways'
// listeners count, accepted or not, so that a Gateway in error moves no
// other's port. In the rare case that the moved-to port is a listener's
// own, the moved listener is not accepted: merging them would serve one
// listener's routes on the other's port.
func (g *gatewayStage) separatePorts() {
	if g.perGateway {
		return
	}
	privileged, own := map[uint32]bool{}, map[uint32]bool{}
	for _, x := range g.gateways {
		for _, l := range x.listeners {
			switch p := l.spec.Port; {
			case l.envoyPort == 0: // an invalid port
			case p < 1024:
				privileged[l.envoyPort] = true
			default:
				own[l.envoyPort] = true
			}
		}
	}
	for _, x := range g.gateways {
		for _, l := range x.listeners {
			if l.spec.Port < 1024 || !privileged[l.envoyPort] {
				continue
			}
			to := l.envoyPort + separatedPortOffset
			if own[to] {
				l.accepted.add(string(gwapiv1.ListenerReasonPortUnavailable), "port %d cannot be served on Envoy port %d (port %d is, for port %d) nor on %d (another listener's port)",
					l.spec.Port, l.envoyPort, l.envoyPort, l.envoyPort-8000, to)
				continue
			}
			l.envoyPort = to
		}
	}
}
