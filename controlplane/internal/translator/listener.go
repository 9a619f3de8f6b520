package translator

import (
	"sort"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	tlsinspectorv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/tls_inspector/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/parallel"
)

const (
	hcmFilterName    = "envoy.filters.network.http_connection_manager"
	tlsInspectorName = "envoy.filters.listener.tls_inspector"
)

// listener adds the resources of one listener of the model, and their
// Index entries, whose origins are the listener's and its hosts'. c is
// used for the shared listeners' hosts only (see Cache).
func listener(r *Resources, m *ir.Model, l *ir.Listener, opts Options, c *Cache) {
	if !l.Shared() {
		c = nil
	}
	switch {
	case l.UDP != nil:
		udpListener(r, l)
	case l.TLS:
		tlsListener(r, m, l, c)
	case len(l.TCPHosts) > 0:
		tcpListener(r, l)
	default:
		plaintextListener(r, m, l, opts, c)
	}
}

// plaintextListener has one filter chain, whose HCM routes with one route
// configuration named after the listener, with the global filters and
// those its routes need (routefilters.go).
func plaintextListener(r *Resources, m *ir.Model, l *ir.Listener, opts Options, c *Cache) {
	h := globalHCM(m).withRoutes(l.Insecure)
	h.keepHostPort = l.KeepHostPort
	rc, hosts, routeBytes := routeConfig(l.Name, l.Insecure, httpRouteSettings(h, opts), c)
	rc.IgnorePortInHostMatching = l.KeepHostPort
	r.keepEncoding(rc, routeBytes)
	if l.Shared() {
		r.Versions.addShared(rc.Name, hosts)
	}
	e := &indexEntry{origins: l.Origins, hosts: hosts}
	r.Routes = append(r.Routes, rc)
	r.Index.add(resourcev3.RouteType, rc.Name, e)
	r.Listeners = append(r.Listeners, &listenerv3.Listener{
		Name:    l.Name,
		Address: socketAddress(l.Address, l.Port),
		FilterChains: []*listenerv3.FilterChain{{
			Filters: []*listenerv3.Filter{hcmFilter(l.Name, rc.Name, h)},
		}},
	})
	r.Index.add(resourcev3.ListenerType, l.Name, e)
}

// tlsListener has one filter chain per TLS virtual host, matched by SNI,
// each with its own HCM and route configuration so that each can have its
// own authorization; one per host proxied over TCP; and the fallback
// chain for clients without SNI. A listener without any is left out:
// Envoy refuses a listener without filter chains.
func tlsListener(r *Resources, m *ir.Model, l *ir.Listener, c *Cache) {
	chains, hosts := secureChains(r, l, modelHCM(m), c)
	var fallback *listenerv3.FilterChain
	if fb := l.Fallback; fb != nil {
		h := globalHCM(m).withRoutes(fb.VirtualHosts)
		rc, fbHosts, routeBytes := routeConfig(fallbackRouteConfigName(l), fb.VirtualHosts, routeSettings{filters: h.filters()}, c)
		r.keepEncoding(rc, routeBytes)
		r.Routes = append(r.Routes, rc)
		r.Index.add(resourcev3.RouteType, rc.Name, &indexEntry{origins: l.Origins, hosts: fbHosts})
		if l.Shared() {
			r.Versions.addShared(rc.Name, fbHosts)
		}
		hosts = append(hosts, fbHosts...)
		fallback = &listenerv3.FilterChain{
			Name:            "fallbackcert",
			TransportSocket: downstreamTLS(fb.Secret, "", "", nil),
			Filters:         []*listenerv3.Filter{hcmFilter("fallbackcert", rc.Name, h)},
		}
	}
	if len(chains) == 0 && fallback == nil {
		return
	}
	// Its chains are added by c, which reuses the last translation's
	// message when nothing changed.
	r.Listeners = append(r.Listeners, c.listener(&listenerv3.Listener{
		Name:    l.Name,
		Address: socketAddress(l.Address, l.Port),
		ListenerFilters: []*listenerv3.ListenerFilter{{
			Name:       tlsInspectorName,
			ConfigType: &listenerv3.ListenerFilter_TypedConfig{TypedConfig: mustAny(&tlsinspectorv3.TlsInspector{})},
		}},
		DefaultFilterChain: fallback,
	}, chains))
	r.Index.add(resourcev3.ListenerType, l.Name, &indexEntry{origins: l.Origins, hosts: hosts})
}

// secureChains are a TLS listener's filter chains of its TLS virtual hosts
// (translated, or taken from c) and of its hosts proxied over TCP, in
// name order, with the hosts they serve; the TLS hosts' route
// configurations are added to r, indexed.
func secureChains(r *Resources, l *ir.Listener, every everyHCM, c *Cache) ([]*listenerv3.FilterChain, []hostOrigins) {
	hosts := append([]*ir.SecureVirtualHost(nil), l.Secure...)
	sort.Slice(hosts, func(i, j int) bool { return hosts[i].FQDN < hosts[j].FQDN })
	translated := make([]cachedHost, len(hosts))
	hit := make([]bool, len(hosts))
	prefix := hostsPrefix(l)
	enc := newChainParts()
	parallel.For(len(hosts), func(i int) {
		if l.Shared() { // taken from c, or translated with versions
			translated[i], hit[i] = c.secureHost(hosts[i], every, enc)
			return
		}
		translated[i].route, translated[i].chain = secureHost(prefix, hosts[i], every, enc)
	})
	c.commit(translated, hit)
	var chains []*listenerv3.FilterChain
	if len(hosts) > 0 {
		chains = make([]*listenerv3.FilterChain, len(hosts))
	}
	// One allocation for all the hosts' entries: there can be ten
	// thousand.
	served := make([]hostOrigins, len(hosts))
	entries := make([]indexEntry, len(hosts))
	for i, t := range translated {
		chains[i] = t.chain
		r.Routes = append(r.Routes, t.route)
		served[i] = secureHostOrigins(hosts[i])
		entries[i] = indexEntry{origins: l.Origins, hosts: served[i : i+1 : i+1]}
		r.Index.add(resourcev3.RouteType, t.route.Name, &entries[i])
		if l.Shared() {
			r.Versions.addSecure(t)
		}
	}
	for _, vh := range l.TCPHosts {
		chains = append(chains, tcpHostChain(prefix, vh))
		served = append(served, tcpHostOrigins(vh))
	}
	sort.SliceStable(chains, func(i, j int) bool { return chains[i].Name < chains[j].Name })
	return chains, served
}

// secureHost translates one TLS virtual host of a listener: its route
// configuration and its filter chain, both named prefix/FQDN, with its
// own HCM (with every, the model's settings of every HCM).
// enc, when not nil, shares the parts hosts have in common (chainParts).
func secureHost(prefix string, vh *ir.SecureVirtualHost, every everyHCM, enc *chainParts) (*routev3.RouteConfiguration, *listenerv3.FilterChain) {
	name := secureName(prefix, vh.FQDN)
	h := hostHCM(vh, every)
	rc, _, _ := routeConfig(name, append([]*ir.VirtualHost{&vh.VirtualHost}, vh.Also...), routeSettings{filters: h.filters()}, nil)
	if len(vh.Misdirected) > 0 {
		rc.VirtualHosts = append(rc.VirtualHosts, misdirectedHost(vh.Misdirected))
	}
	return rc, &listenerv3.FilterChain{
		Name:             name,
		FilterChainMatch: serverNames(vh.FQDN),
		TransportSocket:  enc.downstreamTLS(vh.Secret, vh.MinTLSVersion, vh.MaxTLSVersion, vh.ClientValidation),
		Filters:          []*listenerv3.Filter{enc.hcm(name, h)},
	}
}

// serverNames selects a host's filter chain by SNI. Envoy takes
// "*.example.com" as a wildcard (the most specific server name wins); the
// host "*" has no match at all, so that it gets the clients whose SNI (or
// lack of one) no other chain matches.
func serverNames(fqdn string) *listenerv3.FilterChainMatch {
	if fqdn == "*" {
		return nil
	}
	return &listenerv3.FilterChainMatch{ServerNames: []string{fqdn}}
}

// hcmFilter builds an HTTP connection manager whose routes come over RDS,
// with the HTTP filters its settings need (httpFilters has their order).
func hcmFilter(statPrefix, routeConfig string, h hcmSettings) *listenerv3.Filter {
	return &listenerv3.Filter{
		Name:       hcmFilterName,
		ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: mustAny(hcmMessage(statPrefix, routeConfig, h))},
	}
}

// hcmMessage is hcmFilter's HTTP connection manager.
func hcmMessage(statPrefix, routeConfig string, h hcmSettings) *hcmv3.HttpConnectionManager {
	hcm := &hcmv3.HttpConnectionManager{
		StatPrefix: statPrefix,
		CodecType:  hcmv3.HttpConnectionManager_AUTO,
		RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{
			RouteConfigName: routeConfig,
			ConfigSource:    adsConfigSource(),
		}},
		HttpFilters: hcmHTTPFilters(h),
		// Routing and authorization decide on the normalised path: no
		// "/a/../admin" or "//admin" or "%2Fadmin" gets around a route.
		NormalizePath:                wrapperspb.Bool(true),
		MergeSlashes:                 true,
		PathWithEscapedSlashesAction: hcmv3.HttpConnectionManager_UNESCAPE_AND_REDIRECT,
		UseRemoteAddress:             wrapperspb.Bool(true),
		StripPortMode:                &hcmv3.HttpConnectionManager_StripAnyHostPort{StripAnyHostPort: true},
	}
	hcm.Tracing = hcmTracing(h.tracing)
	hcm.AccessLog = accessLogs(h.accessLog)
	forwardClientCert(hcm, h.xfcc)
	if h.keepHostPort {
		hcm.StripPortMode = nil
	}
	return hcm
}
