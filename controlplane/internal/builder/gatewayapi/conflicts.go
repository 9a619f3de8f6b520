package gatewayapi

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// sharedHosts are the host names the HTTPProxies keep on Envoy's shared
// listeners: built first, they keep them (docs/design/gateway-api.md).
type sharedHosts struct {
	insecure, secure map[string]bool
	// fallback: the HTTPS listener has a fallback-certificate chain, the
	// one for clients without (or with an unknown) SNI name.
	fallback bool
}

func proxyHosts(m *ir.Model) sharedHosts {
	http, https := core.SharedListeners(m)
	h := sharedHosts{insecure: map[string]bool{}, secure: map[string]bool{}, fallback: https.Fallback != nil}
	for _, v := range http.Insecure {
		h.insecure[v.FQDN] = true
	}
	for _, v := range https.Secure {
		h.secure[v.FQDN] = true
	}
	for _, v := range https.TCPHosts {
		h.secure[v.FQDN] = true
	}
	return h
}

// taken reports whether the HTTPProxies keep host on the shared listener
// of port (none: false).
func (h sharedHosts) taken(opts *core.Options, port uint32, host string) bool {
	switch port {
	case opts.HTTP.Port:
		return h.insecure[host]
	case opts.HTTPS.Port:
		return h.secure[host] || host == "*" && h.fallback
	}
	return false
}

// resolveConflicts decides, per Envoy port, which listeners can be served
// together. Listeners of different protocols on one port conflict (all of
// them; on a shared port, those whose protocol is not the shared
// listener's), but for HTTPS and TLS (sameTransport); of listeners
// claiming one hostname on one port, the oldest Gateway's first listener
// keeps it, as the oldest HTTPProxy keeps its FQDN; a hostname an
// HTTPProxy keeps on a shared listener stays its. UDP listeners are
// sockets of their own: they conflict only with each other (a UDP and a
// TCP listener of one port are distinct, and both served), and never
// with the shared listeners, which are TCP's. Listeners invalid on their
// own take no part.
func (g *gatewayStage) resolveConflicts(proxies sharedHosts) {
	type socket struct {
		port uint32
		udp  bool
	}
	byPort := map[socket][]*gwListener{}
	for _, x := range g.gateways {
		if !x.accepted() {
			continue
		}
		for _, l := range x.listeners {
			if len(l.accepted) == 0 {
				k := socket{l.envoyPort, l.udp}
				byPort[k] = append(byPort[k], l)
			}
		}
	}
	for k, ls := range byPort {
		if k.udp { // one protocol, no host names, no HTTPProxy
			g.hostnameConflicts(k.port, ls, sharedHosts{})
			continue
		}
		g.tcpConflicts(k.port, ls, proxies)
	}
}

// tcpConflicts decides which of the TCP-based listeners ls of one Envoy
// port are served: those of one protocol (or HTTPS and TLS), the shared
// listener's when the port is one's, and then by hostname.
func (g *gatewayStage) tcpConflicts(port uint32, ls []*gwListener, proxies sharedHosts) {
	opts := g.R.Opts()
	var want gwapiv1.ProtocolType
	switch {
	case port == opts.HTTP.Port && port != 0:
		want = gwapiv1.HTTPProtocolType
	case port == opts.HTTPS.Port && port != 0:
		want = gwapiv1.HTTPSProtocolType
	case slices.ContainsFunc(ls, func(l *gwListener) bool { return !sameTransport(l.spec.Protocol, ls[0].spec.Protocol) }):
		for _, l := range ls {
			l.conflicted.add(string(gwapiv1.ListenerReasonProtocolConflict), "another listener on port %d (Envoy port %d) has a different protocol", l.spec.Port, port)
		}
		return
	}
	var same []*gwListener
	for _, l := range ls {
		if want != "" && !sameTransport(l.spec.Protocol, want) {
			l.conflicted.add(string(gwapiv1.ListenerReasonProtocolConflict), "Envoy port %d is the shared %s listener's (HTTPProxies'): a listener of protocol %s cannot be served there", port, want, l.spec.Protocol)
			continue
		}
		same = append(same, l)
	}
	g.hostnameConflicts(port, same, proxies)
}

// sameTransport reports whether listeners of protocols a and b can share
// a port: the same protocol, or HTTPS and TLS, whose hosts are told apart
// by SNI on one TLS listener.
func sameTransport(a, b gwapiv1.ProtocolType) bool {
	tls := func(p gwapiv1.ProtocolType) bool {
		return p == gwapiv1.HTTPSProtocolType || p == gwapiv1.TLSProtocolType
	}
	return a == b || tls(a) && tls(b)
}

// sharedAdvice says why listeners of several Gateways (or an HTTPProxy)
// claim one hostname on one port, and what to do: without
// gateway.servicePerGateway the Gateways share Envoy's address and ports,
// and the API allows merging Gateways only when their listeners are
// compatible.
const sharedAdvice = "the Gateways share Envoy's address and listeners (and the HTTPProxies'); " +
	"give this listener a hostname of its own, or set the configuration's gateway.servicePerGateway " +
	"to give each Gateway an address of its own (docs/gateway-api.md, \"Sharing Envoy between Gateways\")"

// hostnameConflicts decides, for each hostname of one port, which
// listener serves it. Listeners of one Gateway that claim it are
// indistinct (they differ only in name): none of them is served, as the
// API's Listener reference says ("MUST NOT pick one conflicting Listener
// as the winner"). Of the other claims, several Gateways' merged on one
// port, the oldest Gateway's keeps it, as GEP-1713's listener precedence
// does for the listeners it merges; a hostname an HTTPProxy keeps stays
// its (docs/gateway-api.md, "Conflicting listeners").
func (g *gatewayStage) hostnameConflicts(port uint32, ls []*gwListener, proxies sharedHosts) {
	slices.SortStableFunc(ls, olderListener)
	claims := map[string][]*gwListener{}
	for _, l := range ls {
		host := cmp.Or(l.hostname, "*")
		claims[host] = append(claims[host], l)
	}
	for host, cs := range claims {
		byGateway := map[*gwGateway][]*gwListener{}
		for _, l := range cs {
			byGateway[l.gw] = append(byGateway[l.gw], l)
		}
		var owner *gwListener
		for _, l := range cs {
			switch same := byGateway[l.gw]; {
			case len(same) > 1:
				l.conflicted.add(string(gwapiv1.ListenerReasonHostnameConflict), "hostname %q on port %d is claimed by listeners %s of the Gateway: listeners that differ only in name are indistinct, and none of them is served", host, l.spec.Port, listenerNames(same))
			case owner != nil:
				l.conflicted.add(string(gwapiv1.ListenerReasonHostnameConflict), "hostname %q on port %d is already %s's (the oldest claim keeps it): %s", host, l.spec.Port, owner, sharedAdvice)
			case proxies.taken(g.R.Opts(), port, host):
				l.conflicted.add(string(gwapiv1.ListenerReasonHostnameConflict), "hostname %q is served on Envoy port %d by an HTTPProxy, which keeps it: %s", host, port, sharedAdvice)
			default:
				owner = l
			}
		}
	}
}

// listenerNames are listeners' names, quoted, for messages.
func listenerNames(ls []*gwListener) string {
	names := make([]string, len(ls))
	for i, l := range ls {
		names[i] = strconv.Quote(string(l.spec.Name))
	}
	return strings.Join(names, ", ")
}

// olderListener orders listeners by their Gateway's age (oldest first; a
// Gateway read from a file claims no age), then namespace and name, then
// their order in the Gateway.
func olderListener(a, b *gwListener) int {
	return cmp.Or(core.OlderClaim(a.gw.gw, b.gw.gw), cmp.Compare(a.index, b.index))
}
