package builder

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// attachment is a route's IR routes served through one ready listener for
// one host.
type attachment struct {
	listener *gwListener
	host     string
	routes   []gwIRRoute
	origin   objects.Ref
}

// hostKey is one virtual host of one Envoy port.
type hostKey struct {
	port uint32
	host string
}

// gwHost is a virtual host under construction.
type gwHost struct {
	listener *gwListener
	routes   []gwIRRoute
	origins  []objects.Ref
}

// placeRoutes merges the attachments into virtual hosts, one per Envoy
// port and host name, and puts them on Envoy's listeners: the shared HTTP
// and HTTPS listeners' (m.Insecure, m.Secure) or their own (m.Listeners).
//
// A host is served by the listener that matches it most specifically
// (an exact hostname, then the longest wildcard, then none): the routes
// attached through a less specific listener of the same port do not serve
// it (listener isolation), and a TLS host gets that listener's
// certificate. A host an HTTPProxy keeps on a shared listener stays its.
func (g *gatewayStage) placeRoutes(m *ir.Model) {
	opts := g.r.opts()
	ready := map[uint32][]*gwListener{}
	for _, x := range g.gateways {
		for _, l := range x.listeners {
			if l.ready() {
				ready[l.envoyPort] = append(ready[l.envoyPort], l)
			}
		}
	}
	proxies := proxyHosts(m)
	hosts := map[hostKey]*gwHost{}
	for _, a := range g.attachments {
		k := hostKey{a.listener.envoyPort, a.host}
		if bestListener(ready[k.port], k.host) != a.listener || proxies.taken(opts, k.port, k.host) {
			continue
		}
		h := hosts[k]
		if h == nil {
			h = &gwHost{listener: a.listener}
			hosts[k] = h
		}
		routes, policies := g.withPolicies(a.listener, a.routes)
		h.routes = append(h.routes, routes...)
		h.origins = append(append(h.origins, a.origin), policies...)
	}
	keys := make([]hostKey, 0, len(hosts))
	for k := range hosts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b hostKey) int { return cmp.Or(cmp.Compare(a.port, b.port), cmp.Compare(a.host, b.host)) })
	listeners := map[uint32]*ir.Listener{}
	for _, k := range keys {
		h := hosts[k]
		l := h.listener
		gw := l.gw.ref()
		vh := ir.VirtualHost{FQDN: k.host, Origins: ir.NewOrigins(append(h.origins, gw)...), Routes: h.irRoutes()}
		var secure *ir.SecureVirtualHost
		if l.tls {
			global := g.r.global()
			secure = &ir.SecureVirtualHost{VirtualHost: vh, Secret: l.secret, Auth: global.auth, ExtProc: global.proc}
			hoistHostFilters(secure)
			g.out.secretUses.add(l.secret, gw)
		}
		switch {
		case k.port == opts.EnvoyHTTPPort && !l.tls:
			m.Insecure = append(m.Insecure, &vh)
		case k.port == opts.EnvoyHTTPSPort && l.tls:
			m.Secure = append(m.Secure, secure)
		default:
			il := listeners[k.port]
			if il == nil {
				il = &ir.Listener{Name: fmt.Sprintf("http-%d", k.port), Port: k.port, TLS: l.tls}
				if l.tls {
					il.Name = fmt.Sprintf("https-%d", k.port)
				}
				listeners[k.port] = il
				m.Listeners = append(m.Listeners, il)
			}
			il.Origins = il.Origins.Union(ir.Origins{gw})
			if l.tls {
				il.Secure = append(il.Secure, secure)
			} else {
				il.Insecure = append(il.Insecure, &vh)
			}
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
