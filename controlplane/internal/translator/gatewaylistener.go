package translator

import (
	"sort"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// gatewayListener adds the resources of a Gateway listener on a port of
// its own (ir.Listener) and their Index entries, whose origins are the
// listener's Gateways and the hosts'. They are translated afresh each
// time, without the Cache: a change of one of these listeners' hosts
// changes the listener anyway, and they are few beside the shared ones.
func gatewayListener(r *Resources, l *ir.Listener, m *ir.Model, opts Options) {
	if l.TLS {
		tlsGatewayListener(r, l, opts)
		return
	}
	// Served like the HTTP listener: the global filters, one route
	// configuration named after the listener.
	// The Gateway API forwards the Host header as the client sent it, port
	// included (a redirect without a port keeps it too): hosts match
	// without it instead of it being stripped.
	h := globalHCM(m).withRoutes(l.Insecure)
	h.keepHostPort = true
	rc, hosts := routeConfig(l.Name, l.Insecure, httpRouteSettings(h, opts), nil)
	rc.IgnorePortInHostMatching = true
	e := &indexEntry{origins: l.Origins, hosts: hosts}
	r.Routes = append(r.Routes, rc)
	r.Index.add(resourcev3.RouteType, rc.Name, e)
	r.Listeners = append(r.Listeners, plaintextListener(l.Name, rc.Name, socketAddress(opts.HTTPAddress, l.Port), h))
	r.Index.add(resourcev3.ListenerType, l.Name, e)
}

// tlsGatewayListener is served like the HTTPS listener (without a
// fallback chain): a filter chain per host, selected by SNI, with its own
// HCM and route configuration, named https-<port>/<host>. A listener
// without hosts is left out: Envoy refuses a listener without filter
// chains.
func tlsGatewayListener(r *Resources, l *ir.Listener, opts Options) {
	if len(l.Secure) == 0 {
		return
	}
	hosts := append([]*ir.SecureVirtualHost(nil), l.Secure...)
	sort.Slice(hosts, func(i, j int) bool { return hosts[i].FQDN < hosts[j].FQDN })
	chains := make([]*listenerv3.FilterChain, len(hosts))
	origins := make([]hostOrigins, len(hosts))
	for i, vh := range hosts {
		rc, chain := secureHost(l.Name, vh)
		chains[i], origins[i] = chain, secureHostOrigins(vh)
		r.Routes = append(r.Routes, rc)
		r.Index.add(resourcev3.RouteType, rc.Name, &indexEntry{origins: l.Origins, hosts: origins[i : i+1 : i+1]})
	}
	r.Listeners = append(r.Listeners, tlsListener(l.Name, socketAddress(opts.HTTPSAddress, l.Port), chains))
	r.Index.add(resourcev3.ListenerType, l.Name, &indexEntry{origins: l.Origins, hosts: origins})
}
