package gatewayapi

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// attachment is a route's IR routes served through one ready listener for
// one host.
type attachment struct {
	listener *gwListener
	host     string
	routes   []gwIRRoute
	origin   objects.Ref
	// parent is the route's status for the parentRef it is attached
	// through (its Accepted says when a host is not served there).
	parent routeParent
}

// routeParent is one entry of a route's status.parents, by index (the
// list grows while the route's parents are resolved).
type routeParent struct {
	st    *status.GatewayAPI
	index int
}

// hostKey is one virtual host of one Envoy port.
type hostKey struct {
	port uint32
	host string
}

// portGateway is one Gateway's listeners of one Envoy port.
type portGateway struct {
	port uint32
	gw   *gwGateway
}

// gwHost is a virtual host under construction.
type gwHost struct {
	listener *gwListener
	routes   []gwIRRoute
	origins  []objects.Ref
	// attached are a stream listener's attachments for the host: one of
	// them serves it (streamServedByOther tells the others).
	attached []attachment
}

// placeRoutes merges the attachments into virtual hosts, one per Envoy
// port and host name, and puts them on Envoy's listeners: the shared HTTP
// and HTTPS listeners or their own.
//
// A host is served by the listener that matches it most specifically
// (an exact hostname, then the longest wildcard, then none): the routes
// attached through a less specific listener of the same port do not serve
// it (listener isolation), and a TLS host gets that listener's
// certificate. A host an HTTPProxy keeps on a shared listener stays its.
func (g *gatewayStage) placeRoutes(m *ir.Model) {
	ready := g.readyListeners()
	owner := g.hostOwners()
	hosts := g.mergeAttachments(ready, owner, proxyHosts(m))
	g.listenerCatchAll(ready, owner, hosts)
	keys := make([]hostKey, 0, len(hosts))
	for k := range hosts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b hostKey) int { return cmp.Or(cmp.Compare(a.port, b.port), cmp.Compare(a.host, b.host)) })
	listeners := placedListeners(m)
	for _, k := range keys {
		g.placeHost(m, listeners, k, hosts[k])
	}
	g.detectMisdirected(ready)
	g.placeUDP(m)
}

// readyListeners are each Gateway's ready listeners of hosts, per Envoy
// port: UDP listeners, which have none, are placed apart (placeUDP).
func (g *gatewayStage) readyListeners() map[portGateway][]*gwListener {
	ready := map[portGateway][]*gwListener{}
	for _, x := range g.gateways {
		for _, l := range x.listeners {
			if l.ready() && !l.udp {
				k := portGateway{l.envoyPort, x}
				ready[k] = append(ready[k], l)
			}
		}
	}
	return ready
}

// hostOwners are the Gateways that keep each host name of a port.
//
// A host name served through listeners of several Gateways on one port
// is the oldest Gateway's, as an FQDN is the oldest HTTPProxy's: another
// namespace's Gateway cannot take it over with a more specific listener.
// Within that Gateway, the listener that matches it most specifically
// serves it.
func (g *gatewayStage) hostOwners() map[hostKey]*gwGateway {
	owner := map[hostKey]*gwGateway{}
	for _, a := range g.attachments {
		if a.listener.udp {
			continue
		}
		k := hostKey{a.listener.envoyPort, a.host}
		if o := owner[k]; o == nil || core.OlderClaim(a.listener.gw.gw, o.gw) < 0 {
			owner[k] = a.listener.gw
		}
	}
	return owner
}

// mergeAttachments merges the attachments through the listener that
// serves each host (of its owner, and not kept by an HTTPProxy) into
// virtual hosts.
func (g *gatewayStage) mergeAttachments(ready map[portGateway][]*gwListener, owner map[hostKey]*gwGateway, proxies sharedHosts) map[hostKey]*gwHost {
	opts := g.R.Opts()
	// best is the listener that serves each host (decided once per host,
	// not per attachment).
	best := map[hostKey]*gwListener{}
	hosts := map[hostKey]*gwHost{}
	for _, a := range g.attachments {
		if a.listener.udp {
			continue
		}
		k := hostKey{a.listener.envoyPort, a.host}
		o := owner[k]
		if o != a.listener.gw {
			if !proxies.taken(opts, k.port, k.host) {
				notServed(a, "host %q on port %d is served through the older Gateway %s/%s, which keeps it: it is not served through Gateway %s/%s", k.host, a.listener.spec.Port, o.gw.Namespace, o.gw.Name, a.listener.gw.gw.Namespace, a.listener.gw.gw.Name)
			}
			continue
		}
		l, decided := best[k]
		if !decided {
			l = bestListener(ready[portGateway{k.port, o}], k.host)
			best[k] = l
		}
		if l != a.listener || proxies.taken(opts, k.port, k.host) {
			continue
		}
		g.addAttachment(hosts, k, a)
	}
	return hosts
}

// addAttachment adds an attachment's routes, with its listener's port in
// their redirects and the policies that apply to them, to the virtual
// host k.
func (g *gatewayStage) addAttachment(hosts map[hostKey]*gwHost, k hostKey, a attachment) {
	h := hosts[k]
	if h == nil {
		h = &gwHost{listener: a.listener}
		hosts[k] = h
	}
	if a.listener.stream { // no HTTP policy applies to proxied connections
		h.routes = append(h.routes, a.routes...)
		h.origins = append(h.origins, a.origin)
		h.attached = append(h.attached, a)
		return
	}
	routes, policies := g.withPolicies(a.listener, withListenerPort(a.listener, a.routes))
	h.routes = append(h.routes, routes...)
	h.origins = append(append(h.origins, a.origin), policies...)
}

// placeHost puts the virtual host k on its Envoy listener: the shared
// HTTP or HTTPS listener when its port is theirs (resolveConflicts leaves
// no listener of the other protocol there), else one of its port (in
// listeners, made on first use).
func (g *gatewayStage) placeHost(m *ir.Model, listeners map[uint32]*ir.Listener, k hostKey, h *gwHost) {
	l := h.listener
	gw := l.gw.ref()
	origins := append(h.origins, gw)
	if l.set != nil {
		origins = append(origins, l.set.ref()) // Envoy's rejection of its host reaches it too
	}
	vh := ir.VirtualHost{FQDN: k.host, Origins: ir.NewOrigins(origins...), Routes: g.withClientCert(l.gw, h.irRoutes())}
	il := listeners[k.port]
	if il == nil {
		il = g.gatewayListener(k.port, l)
		listeners[k.port] = il
		m.Listeners = append(m.Listeners, il)
	}
	if !il.Shared() {
		il.Origins = il.Origins.Union(ir.Origins{gw})
	}
	if l.stream {
		il.TCPHosts = append(il.TCPHosts, streamHost(vh, l.secret))
		streamServedByOther(h, vh, k.host)
		if l.secret != "" {
			g.Out.SecretUses.Add(l.secret, l.ownerRef())
		}
		return
	}
	g.addListenerExtensions(il, l)
	if !l.tls {
		il.Insecure = append(il.Insecure, &vh)
		return
	}
	global := g.R.Global()
	secure := &ir.SecureVirtualHost{VirtualHost: vh, Secret: l.secret, Auth: global.Auth, ExtProc: global.Proc, ClientValidation: l.clientValidation}
	hoistHostFilters(secure)
	g.Out.SecretUses.Add(l.secret, l.ownerRef())
	if l.clientCA != nil {
		g.Out.UseSecret(l.clientCA)
		g.Out.SecretUses.Add(l.clientCA.Name, gw)
	}
	il.Secure = append(il.Secure, secure)
	g.placedTLS = append(g.placedTLS, placedTLSHost{envoy: il, listener: l, host: secure, unhoisted: &vh})
}

// placedListeners are the listeners Gateway hosts are placed on by port,
// to begin with the shared ones.
func placedListeners(m *ir.Model) map[uint32]*ir.Listener {
	listeners := map[uint32]*ir.Listener{}
	http, https := core.SharedListeners(m)
	for _, l := range []*ir.Listener{http, https} {
		if l.Port != 0 {
			listeners[l.Port] = l
		}
	}
	return listeners
}

// gatewayListener is the Envoy listener of a Gateway port of its own,
// for listeners like l. Its hosts match the Host header with its port, as
// the Gateway API forwards it.
func (g *gatewayStage) gatewayListener(port uint32, l *gwListener) *ir.Listener {
	opts := g.R.Opts()
	switch {
	case l.stream && !l.tls: // TCP: the plaintext address
		return &ir.Listener{Name: fmt.Sprintf("tcp-%d", port), Address: opts.HTTP.Address, Port: port}
	case l.tls:
		return &ir.Listener{Name: fmt.Sprintf("https-%d", port), Address: opts.HTTPS.Address, Port: port, TLS: true, KeepHostPort: true}
	}
	return &ir.Listener{Name: fmt.Sprintf("http-%d", port), Address: opts.HTTP.Address, Port: port, KeepHostPort: true}
}

// withListenerPort gives the redirects of routes that set neither a scheme
// nor a port the listener's port, as the Gateway API asks: clients reach
// the listener on it, and Envoy's Location would lose it with a new
// hostname. The default port of the listener's scheme is left out, as
// URLs leave it out.
func withListenerPort(l *gwListener, routes []gwIRRoute) []gwIRRoute {
	port := core.NonNegativeUint32(l.spec.Port)
	if (!l.tls && port == 80) || (l.tls && port == 443) {
		return routes
	}
	var out []gwIRRoute
	for i, r := range routes {
		if rd := r.route.Redirect; rd == nil || rd.Scheme != "" || rd.Port != 0 {
			continue
		}
		if out == nil {
			out = slices.Clone(routes)
		}
		x, rd := *r.route, *r.route.Redirect
		rd.Port = port
		x.Redirect = &rd
		out[i].route = &x
	}
	if out == nil {
		return routes
	}
	return out
}

// listenerCatchAll gives each ready TLS listener of its own Envoy port
// (not the shared HTTPS listener's, where HTTPProxies' fallback rules) a
// host of its hostname ("*" for none) when no route serves that name: it
// accepts every host its hostname matches, so a client whose SNI names no
// routed host gets the listener's certificate and a 404, not a reset. The
// oldest Gateway of a port claims it first.
func (g *gatewayStage) listenerCatchAll(ready map[portGateway][]*gwListener, owner map[hostKey]*gwGateway, hosts map[hostKey]*gwHost) {
	opts := g.R.Opts()
	gws := slices.Clone(g.gateways)
	slices.SortStableFunc(gws, func(a, b *gwGateway) int { return core.OlderClaim(a.gw, b.gw) })
	for _, x := range gws {
		for _, l := range x.listeners {
			if !l.tls || l.stream || !l.ready() || l.envoyPort == opts.HTTPS.Port {
				continue
			}
			k := hostKey{l.envoyPort, cmp.Or(l.hostname, "*")}
			if hosts[k] != nil || (owner[k] != nil && owner[k] != x) {
				continue
			}
			if bestListener(ready[portGateway{l.envoyPort, x}], k.host) == l {
				hosts[k] = &gwHost{listener: l}
			}
		}
	}
}

// notServed says in a route's Accepted condition (for the parent it is
// attached through) that a host of it is not served there.
func notServed(a attachment, format string, args ...any) {
	if a.parent.st == nil {
		return
	}
	msg := fmt.Sprintf(format, args...)
	parent := &a.parent.st.Parents[a.parent.index]
	for i := range parent.Conditions {
		c := &parent.Conditions[i]
		if c.Type != string(gwapiv1.RouteConditionAccepted) {
			continue
		}
		if c.Status == metav1.ConditionTrue {
			c.Status, c.Reason, c.Message = metav1.ConditionFalse, string(gwapiv1.ListenerReasonHostnameConflict), msg
		} else if !strings.Contains(c.Message, msg) {
			c.Message += "; " + msg
		}
	}
}

// irRoutes are a host's routes in the order Envoy must try them.
func (h *gwHost) irRoutes() []*ir.Route {
	sortByPrecedence(h.routes)
	out := make([]*ir.Route, len(h.routes))
	for i, r := range h.routes {
		out[i] = r.route
	}
	return out
}

// bestListener is the listener of ls that matches host most
// specifically; nil for none.
func bestListener(ls []*gwListener, host string) *gwListener {
	var best *gwListener
	bestScore := -1
	for _, l := range ls {
		score := -1
		switch {
		case l.hostname == host:
			score = 1 << 20 // exact (or the same wildcard)
		case l.hostname == "":
			score = 0
		case wildcardMatches(l.hostname, host):
			score = len(l.hostname)
		}
		if score > bestScore {
			best, bestScore = l, score
		}
	}
	return best
}
