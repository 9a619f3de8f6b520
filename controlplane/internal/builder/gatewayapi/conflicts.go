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
	for k, ls := range g.listenersByPort() {
		if k.udp { // one protocol, no host names, no HTTPProxy
			g.hostnameConflicts(k.port, ls, sharedHosts{})
			continue
		}
		g.tcpConflicts(k.port, ls, proxies)
	}
}

// socket is an Envoy port of one transport: a UDP and a TCP listener of
// one port number are distinct sockets.
type socket struct {
	port uint32
	udp  bool
}

// listenersByPort are the listeners of the accepted Gateways valid on
// their own, by Envoy socket, once each Gateway's ListenerSets' protocols
// are decided (protocolPrecedence).
func (g *gatewayStage) listenersByPort() map[socket][]*gwListener {
	byPort := map[socket][]*gwListener{}
	for _, x := range g.gateways {
		if !x.accepted() {
			continue
		}
		protocolPrecedence(x)
		for _, l := range x.listeners {
			if len(l.accepted) == 0 && len(l.conflicted) == 0 {
				k := socket{l.envoyPort, l.udp}
				byPort[k] = append(byPort[k], l)
			}
		}
	}
	return byPort
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

// protocolPrecedence decides the protocol of each Envoy port of a Gateway
// with ListenerSets: a ListenerSet's listener whose protocol another
// listener of the port has before it in the Gateway's precedence (its own
// listeners, then the ListenerSets oldest first) cannot share is
// Conflicted (ProtocolConflict) and the first keeps the port, as GEP-1713
// says ("the first Listener in the precedence list MUST be accepted").
// Listeners of one resource that disagree on a port are left to
// resolveConflicts: none of them wins ("Conflicting listeners"). UDP
// listeners have a port of their own (socket).
func protocolPrecedence(x *gwGateway) {
	if len(x.sets) == 0 {
		return
	}
	first := map[socket]*gwListener{}
	claim := func(ls []*gwListener) {
		for _, l := range ls {
			k := socket{l.envoyPort, l.udp}
			if len(l.accepted) == 0 && len(l.conflicted) == 0 && first[k] == nil {
				first[k] = l
			}
		}
	}
	claim(x.ownListeners())
	for _, s := range x.sets {
		for _, l := range s.listeners {
			if f := first[socket{l.envoyPort, l.udp}]; f != nil && len(l.accepted) == 0 && !sameTransport(l.spec.Protocol, f.spec.Protocol) {
				l.conflicted.add(string(gwapiv1.ListenerReasonProtocolConflict), "port %d is served for protocol %s by %s, which comes first in the Gateway's listener precedence (GEP-1713): a listener of protocol %s cannot be served there",
					l.spec.Port, f.spec.Protocol, f, l.spec.Protocol)
			}
		}
		claim(s.listeners)
	}
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
		// A resource is a Gateway's own listeners, or a ListenerSet's.
		type resource struct {
			gw  *gwGateway
			set *gwListenerSet
		}
		byResource := map[resource][]*gwListener{}
		for _, l := range cs {
			byResource[resource{l.gw, l.set}] = append(byResource[resource{l.gw, l.set}], l)
		}
		var owner *gwListener
		for _, l := range cs {
			switch same := byResource[resource{l.gw, l.set}]; {
			case len(same) > 1:
				of := "the Gateway"
				if l.set != nil {
					of = l.set.String()
				}
				l.conflicted.add(string(gwapiv1.ListenerReasonHostnameConflict), "hostname %q on port %d is claimed by listeners %s of %s: listeners that differ only in name are indistinct, and none of them is served", host, l.spec.Port, listenerNames(same), of)
			case owner != nil && owner.gw == l.gw:
				l.conflicted.add(string(gwapiv1.ListenerReasonHostnameConflict), "hostname %q on port %d is already %s's, which comes first in the Gateway's listener precedence (its own listeners, then its ListenerSets oldest first: GEP-1713); give this listener a hostname of its own", host, l.spec.Port, owner)
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
// their place in the Gateway's precedence (its own, then its ListenerSets
// oldest first, then by namespace/name: GEP-1713), then their order in
// their resource.
func olderListener(a, b *gwListener) int {
	return cmp.Or(core.OlderClaim(a.gw.gw, b.gw.gw), cmp.Compare(a.rank(), b.rank()), cmp.Compare(a.index, b.index))
}
