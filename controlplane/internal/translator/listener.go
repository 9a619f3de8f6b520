package translator

import (
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	tlsinspectorv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/tls_inspector/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

const (
	hcmFilterName    = "envoy.filters.network.http_connection_manager"
	tlsInspectorName = "envoy.filters.listener.tls_inspector"
)

// plaintextListener has one filter chain, whose HCM (settings h) routes
// with the route configuration routeConfig: the HTTP listener, and a
// plaintext Gateway listener.
func plaintextListener(name, routeConfig string, addr *corev3.Address, h hcmSettings) *listenerv3.Listener {
	return &listenerv3.Listener{
		Name:    name,
		Address: addr,
		FilterChains: []*listenerv3.FilterChain{{
			Filters: []*listenerv3.Filter{hcmFilter(name, routeConfig, h)},
		}},
	}
}

// httpsListener has one filter chain per TLS virtual host, matched by SNI,
// each with its own HCM so that each can have its own authorization; and the
// fallback chain for clients without SNI, whose HCM has the settings
// fallback. Nil when there is no TLS host. chains are the filter chains of
// m.Secure, sorted by FQDN.
func httpsListener(m *ir.Model, opts Options, chains []*listenerv3.FilterChain, fallback hcmSettings) *listenerv3.Listener {
	if len(m.Secure) == 0 && len(m.TCPHosts) == 0 && m.Fallback == nil {
		return nil
	}
	l := tlsListener(HTTPSListenerName, socketAddress(opts.HTTPSAddress, opts.HTTPSPort), chains)
	if fb := m.Fallback; fb != nil {
		l.DefaultFilterChain = &listenerv3.FilterChain{
			Name:            "fallbackcert",
			TransportSocket: downstreamTLS(fb.Secret, "", "", nil),
			Filters:         []*listenerv3.Filter{hcmFilter("fallbackcert", FallbackRouteConfigName, fallback)},
		}
	}
	return l
}

// tlsListener selects its filter chains by SNI (the TLS inspector reads
// it).
func tlsListener(name string, addr *corev3.Address, chains []*listenerv3.FilterChain) *listenerv3.Listener {
	return &listenerv3.Listener{
		Name:    name,
		Address: addr,
		ListenerFilters: []*listenerv3.ListenerFilter{{
			Name:       tlsInspectorName,
			ConfigType: &listenerv3.ListenerFilter_TypedConfig{TypedConfig: mustAny(&tlsinspectorv3.TlsInspector{})},
		}},
		FilterChains: chains,
	}
}

// secureHost translates one TLS virtual host of a listener: its route
// configuration and its filter chain, both named prefix/FQDN, with its
// own HCM.
func secureHost(prefix string, vh *ir.SecureVirtualHost) (*routev3.RouteConfiguration, *listenerv3.FilterChain) {
	name := secureName(prefix, vh.FQDN)
	h := hostHCM(vh)
	rc, _ := routeConfig(name, []*ir.VirtualHost{&vh.VirtualHost}, routeSettings{filters: h.filters()}, nil)
	return rc, &listenerv3.FilterChain{
		Name:             name,
		FilterChainMatch: serverNames(vh.FQDN),
		TransportSocket:  downstreamTLS(vh.Secret, vh.MinTLSVersion, vh.MaxTLSVersion, vh.ClientValidation),
		Filters:          []*listenerv3.Filter{hcmFilter(name, name, h)},
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
	forwardClientCert(hcm, h.xfcc)
	if h.keepHostPort {
		hcm.StripPortMode = nil
	}
	return &listenerv3.Filter{
		Name:       hcmFilterName,
		ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: mustAny(hcm)},
	}
}
