package gatewayapi

import (
	"slices"
	"strings"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// placedTLSHost is a TLS virtual host placed on an Envoy listener for a
// Gateway listener; unhoisted is its virtual host before its routes'
// filters were hoisted into its HCM (hoistHostFilters), to be served in
// another host's HCM.
type placedTLSHost struct {
	envoy     *ir.Listener
	listener  *gwListener
	host      *ir.SecureVirtualHost
	unhoisted *ir.VirtualHost
}

// detectMisdirected tells each TLS host of a Gateway listener which host
// names its connections must not serve (GatewayHTTPSListenerDetectMisdirectedRequests):
// those of the other TLS listeners of its port (their hostnames, and the
// hosts placed for them), and any name but its own listener's when that
// listener has a hostname. Their requests are answered 421: they would
// bypass the certificate and the client validation the SNI chose.
//
// The catch-all host "*" of a listener without a hostname (the chain of
// clients whose SNI names no host) also serves the listener's other
// hosts, as their own chains do: a request's Host, not only its SNI,
// chooses among a listener's hosts. They are served with their own
// routes' filters (unhoisted), never the catch-all's alone.
func (g *gatewayStage) detectMisdirected(ready map[portGateway][]*gwListener) {
	byPort := map[uint32][]*gwListener{}
	for k, ls := range ready {
		for _, l := range ls {
			if l.tls {
				byPort[k.port] = append(byPort[k.port], l)
			}
		}
	}
	for _, h := range g.placedTLS {
		h.host.Misdirected, h.host.Also = g.misdirected(h, byPort[h.listener.envoyPort])
	}
}

// misdirected are the host names h's connections must not serve (sorted)
// and the other hosts of its listener it serves (its catch-all's); sibling
// are the TLS listeners of its port.
func (g *gatewayStage) misdirected(h placedTLSHost, siblings []*gwListener) ([]string, []*ir.VirtualHost) {
	var names []string
	for _, other := range siblings {
		if other != h.listener && other.hostname != "" {
			names = append(names, other.hostname)
		}
	}
	var also []*ir.VirtualHost
	for _, o := range g.placedTLS {
		switch {
		case o.envoy != h.envoy || o.host == h.host || o.host.FQDN == "*":
		case o.listener != h.listener:
			names = append(names, o.host.FQDN)
		case h.host.FQDN == "*":
			also = append(also, o.unhoisted)
		}
	}
	if h.listener.hostname != "" {
		names = append(names, "*")
	}
	// Not the names served here (Envoy refuses a domain twice).
	names = slices.DeleteFunc(names, func(n string) bool {
		return n == h.host.FQDN || slices.ContainsFunc(also, func(v *ir.VirtualHost) bool { return v.FQDN == n })
	})
	slices.Sort(names)
	slices.SortFunc(also, func(a, b *ir.VirtualHost) int { return strings.Compare(a.FQDN, b.FQDN) })
	return slices.Compact(names), also
}
