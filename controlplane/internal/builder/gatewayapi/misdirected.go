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
	// The hosts of each Envoy listener by Gateway listener, in placing
	// order: each host's answer is read from its own groups, not from
	// every host placed (10,000 hosts of one listener made that 10^8
	// comparisons).
	type group struct {
		listener *gwListener
		hosts    []placedTLSHost
	}
	byEnvoy := map[*ir.Listener][]*group{}
	for _, h := range g.placedTLS {
		groups := byEnvoy[h.envoy]
		i := slices.IndexFunc(groups, func(gr *group) bool { return gr.listener == h.listener })
		if i < 0 {
			i = len(groups)
			byEnvoy[h.envoy] = append(groups, &group{listener: h.listener})
		}
		byEnvoy[h.envoy][i].hosts = append(byEnvoy[h.envoy][i].hosts, h)
	}
	for _, groups := range byEnvoy {
		for _, gr := range groups {
			others := otherNames(gr.listener, byPort[gr.listener.envoyPort], func(yield func(string)) {
				for _, o := range groups {
					if o != gr {
						for _, h := range o.hosts {
							yield(h.host.FQDN)
						}
					}
				}
			})
			uncovered := withoutCovered(others, nil)
			for _, h := range gr.hosts {
				h.host.Also = also(h, gr.hosts)
				h.host.Misdirected = misdirected(h, others, uncovered)
			}
		}
	}
}

// otherNames are the names the hosts of listener l must not serve before
// their own are taken out (sorted, each once): its port's other TLS
// listeners' hostnames (siblings), the hosts placed for the other
// listeners of its Envoy listener (hosts), and any name when l has a
// hostname ("*").
func otherNames(l *gwListener, siblings []*gwListener, hosts func(yield func(string))) []string {
	var names []string
	for _, other := range siblings {
		if other != l && other.hostname != "" {
			names = append(names, other.hostname)
		}
	}
	hosts(func(fqdn string) {
		if fqdn != "*" {
			names = append(names, fqdn)
		}
	})
	if l.hostname != "" {
		names = append(names, "*")
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// also are the other hosts of h's listener that h serves (sorted): all of
// them when h is its catch-all, none otherwise.
func also(h placedTLSHost, listenerHosts []placedTLSHost) []*ir.VirtualHost {
	if h.host.FQDN != "*" {
		return nil
	}
	var out []*ir.VirtualHost
	for _, o := range listenerHosts {
		if o.host != h.host && o.host.FQDN != "*" {
			out = append(out, o.unhoisted)
		}
	}
	slices.SortFunc(out, func(a, b *ir.VirtualHost) int { return strings.Compare(a.FQDN, b.FQDN) })
	return out
}

// misdirected are the names of others that h's connections must not
// serve: not the names served here (Envoy refuses a domain twice), nor a
// name that a wildcard of the list already sends to the 421 virtual host
// (withoutCovered): else each host of a listener would list every host of
// the port's other listeners, and two listeners of 2,000 hosts each made
// 300 MB of route configuration. uncovered is others without the covered
// names, the answer for a host served by its exact name alone.
func misdirected(h placedTLSHost, others, uncovered []string) []string {
	served := []string{h.host.FQDN}
	for _, v := range h.host.Also {
		served = append(served, v.FQDN)
	}
	if len(served) == 1 && !strings.HasPrefix(h.host.FQDN, "*") {
		return slices.DeleteFunc(slices.Clone(uncovered), func(n string) bool { return n == h.host.FQDN })
	}
	var names []string
	for _, n := range others {
		if !slices.Contains(served, n) {
			names = append(names, n)
		}
	}
	return withoutCovered(names, served)
}

// withoutCovered is names (sorted) without those another wildcard of names
// matches, unless a name served matches them too: Envoy then picks the
// served name or the wildcard by specificity, and only the name itself is
// sure to be answered 421. A wildcard that matches a wildcard matches all
// it matches, so what is left still sends every name to the 421 host.
func withoutCovered(names, served []string) []string {
	var wildcards []string
	for _, n := range names {
		if strings.HasPrefix(n, "*") {
			wildcards = append(wildcards, n)
		}
	}
	if len(wildcards) == 0 {
		return names
	}
	var out []string
	for _, n := range names {
		covered := slices.ContainsFunc(wildcards, func(w string) bool { return w != n && domainMatches(w, n) })
		if !covered || slices.ContainsFunc(served, func(s string) bool { return domainMatches(s, n) }) {
			out = append(out, n)
		}
	}
	return out
}

// domainMatches reports whether Envoy's virtual host domain d matches the
// name n (itself a domain: a wildcard is matched by a wider one).
func domainMatches(d, n string) bool {
	switch {
	case d == n || d == "*":
		return true
	case strings.HasPrefix(d, "*"):
		return len(n) > len(d)-1 && strings.HasSuffix(n, d[1:])
	}
	return false
}
