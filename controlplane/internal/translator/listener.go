package translator

import (
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	extauthzv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_authz/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	tlsinspectorv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/tls_inspector/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// Filter names, as Envoy knows them.
const (
	ExtAuthzFilterName = "envoy.filters.http.ext_authz"
	ExtProcFilterName  = "envoy.filters.http.ext_proc"
	RouterFilterName   = "envoy.filters.http.router"
	hcmFilterName      = "envoy.filters.network.http_connection_manager"
	tlsInspectorName   = "envoy.filters.listener.tls_inspector"
	tlsTransportName   = "envoy.transport_sockets.tls"
)

func httpListener(m *ir.Model, opts Options) *listenerv3.Listener {
	return &listenerv3.Listener{
		Name:    HTTPListenerName,
		Address: socketAddress(opts.HTTPAddress, opts.HTTPPort),
		FilterChains: []*listenerv3.FilterChain{{
			Filters: []*listenerv3.Filter{hcmFilter(HTTPListenerName, HTTPRouteConfigName, m.GlobalAuth, m.GlobalExtProc)},
		}},
	}
}

// httpsListener has one filter chain per TLS virtual host, matched by SNI,
// each with its own HCM so that each can have its own authorization; and the
// fallback chain for clients without SNI. Nil when there is no TLS host.
// chains are the filter chains of m.Secure, sorted by FQDN.
func httpsListener(m *ir.Model, opts Options, chains []*listenerv3.FilterChain) *listenerv3.Listener {
	if len(m.Secure) == 0 && m.Fallback == nil {
		return nil
	}
	l := &listenerv3.Listener{
		Name:    HTTPSListenerName,
		Address: socketAddress(opts.HTTPSAddress, opts.HTTPSPort),
		ListenerFilters: []*listenerv3.ListenerFilter{{
			Name:       tlsInspectorName,
			ConfigType: &listenerv3.ListenerFilter_TypedConfig{TypedConfig: mustAny(&tlsinspectorv3.TlsInspector{})},
		}},
	}
	l.FilterChains = chains
	if fb := m.Fallback; fb != nil {
		l.DefaultFilterChain = &listenerv3.FilterChain{
			Name:            "fallbackcert",
			TransportSocket: downstreamTLS(fb.Secret, "", "", nil),
			Filters:         []*listenerv3.Filter{hcmFilter("fallbackcert", FallbackRouteConfigName, m.GlobalAuth, m.GlobalExtProc)},
		}
	}
	return l
}

// filterChain is the filter chain of one TLS virtual host.
func filterChain(vh *ir.SecureVirtualHost) *listenerv3.FilterChain {
	return &listenerv3.FilterChain{
		Name:             "https/" + vh.FQDN,
		FilterChainMatch: &listenerv3.FilterChainMatch{ServerNames: []string{vh.FQDN}},
		TransportSocket:  downstreamTLS(vh.Secret, vh.MinTLSVersion, vh.MaxTLSVersion, vh.ClientValidation),
		Filters:          []*listenerv3.Filter{hcmFilter("https/"+vh.FQDN, SecureRouteConfigName(vh.FQDN), vh.Auth, vh.ExtProc)},
	}
}

// hcmFilter builds an HTTP connection manager whose routes come over RDS.
// The filter order is ext_authz, then ext_proc (a processor only sees
// authorized requests), then the router.
func hcmFilter(statPrefix, routeConfig string, auth *ir.ExtAuth, proc *ir.ExtProc) *listenerv3.Filter {
	var filters []*hcmv3.HttpFilter
	if auth != nil {
		filters = append(filters, &hcmv3.HttpFilter{
			Name:       ExtAuthzFilterName,
			ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: mustAny(extAuthz(auth))},
		})
	}
	if proc != nil {
		filters = append(filters, &hcmv3.HttpFilter{
			Name:       ExtProcFilterName,
			ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: mustAny(extProc(proc))},
		})
	}
	filters = append(filters, &hcmv3.HttpFilter{
		Name:       RouterFilterName,
		ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: mustAny(&routerv3.Router{})},
	})
	hcm := &hcmv3.HttpConnectionManager{
		StatPrefix: statPrefix,
		CodecType:  hcmv3.HttpConnectionManager_AUTO,
		RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{
			RouteConfigName: routeConfig,
			ConfigSource:    adsConfigSource(),
		}},
		HttpFilters: filters,
		// Routing and authorization decide on the normalised path: no
		// "/a/../admin" or "//admin" or "%2Fadmin" gets around a route.
		NormalizePath:                wrapperspb.Bool(true),
		MergeSlashes:                 true,
		PathWithEscapedSlashesAction: hcmv3.HttpConnectionManager_UNESCAPE_AND_REDIRECT,
		UseRemoteAddress:             wrapperspb.Bool(true),
		StripPortMode:                &hcmv3.HttpConnectionManager_StripAnyHostPort{StripAnyHostPort: true},
	}
	return &listenerv3.Filter{
		Name:       hcmFilterName,
		ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: mustAny(hcm)},
	}
}

// grpcService points at an ExtensionService cluster. A nil timeout leaves
// Envoy's default; 0 is no timeout (Envoy reads an explicit 0s as none; an
// unset ext_authz timeout would be 200ms).
func grpcService(cluster, authority string, timeout *time.Duration) *corev3.GrpcService {
	grpc := &corev3.GrpcService{
		TargetSpecifier: &corev3.GrpcService_EnvoyGrpc_{EnvoyGrpc: &corev3.GrpcService_EnvoyGrpc{
			ClusterName: cluster,
			Authority:   authority,
		}},
	}
	if timeout != nil {
		grpc.Timeout = durationpb.New(*timeout)
	}
	return grpc
}

func extAuthz(a *ir.ExtAuth) *extauthzv3.ExtAuthz {
	cfg := &extauthzv3.ExtAuthz{
		Services:            &extauthzv3.ExtAuthz_GrpcService{GrpcService: grpcService(a.Cluster, a.Authority, &a.Timeout)},
		TransportApiVersion: corev3.ApiVersion_V3,
		FailureModeAllow:    a.FailOpen,
		// Client certificates are always sent when present
		// (docs/design/external-authorization.md).
		IncludePeerCertificate: true,
		// Auth servers are not always ours: a header an auth server adds
		// or removes that is not valid HTTP becomes a clean error response
		// instead of reaching the client or the upstream.
		ValidateMutations: true,
	}
	if b := a.WithRequestBody; b != nil {
		cfg.WithRequestBody = &extauthzv3.BufferSettings{
			MaxRequestBytes:     b.MaxRequestBytes,
			AllowPartialMessage: b.AllowPartialMessage,
			PackAsBytes:         b.PackAsBytes,
		}
	}
	return cfg
}

func downstreamTLS(secret, minVersion, maxVersion string, cv *ir.ClientValidation) *corev3.TransportSocket {
	common := &tlsv3.CommonTlsContext{
		TlsParams: &tlsv3.TlsParameters{
			TlsMinimumProtocolVersion: tlsVersion(minVersion, tlsv3.TlsParameters_TLSv1_2),
			TlsMaximumProtocolVersion: tlsVersion(maxVersion, tlsv3.TlsParameters_TLSv1_3),
		},
		TlsCertificateSdsSecretConfigs: []*tlsv3.SdsSecretConfig{sdsSecret(secret)},
		AlpnProtocols:                  []string{"h2", "http/1.1"},
	}
	ctx := &tlsv3.DownstreamTlsContext{CommonTlsContext: common}
	if cv != nil {
		ctx.RequireClientCertificate = wrapperspb.Bool(!cv.Optional)
		if cv.SkipVerification {
			common.ValidationContextType = &tlsv3.CommonTlsContext_ValidationContext{
				ValidationContext: &tlsv3.CertificateValidationContext{
					TrustChainVerification: tlsv3.CertificateValidationContext_ACCEPT_UNTRUSTED,
				},
			}
		} else {
			common.ValidationContextType = &tlsv3.CommonTlsContext_ValidationContextSdsSecretConfig{
				ValidationContextSdsSecretConfig: sdsSecret(cv.CASecret),
			}
		}
	}
	return &corev3.TransportSocket{
		Name:       tlsTransportName,
		ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: mustAny(ctx)},
	}
}

func tlsVersion(v string, def tlsv3.TlsParameters_TlsProtocol) tlsv3.TlsParameters_TlsProtocol {
	switch v {
	case "1.2":
		return tlsv3.TlsParameters_TLSv1_2
	case "1.3":
		return tlsv3.TlsParameters_TLSv1_3
	}
	return def
}

func sdsSecret(name string) *tlsv3.SdsSecretConfig {
	return &tlsv3.SdsSecretConfig{Name: name, SdsConfig: adsConfigSource()}
}

func adsConfigSource() *corev3.ConfigSource {
	return &corev3.ConfigSource{
		ResourceApiVersion:    corev3.ApiVersion_V3,
		ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}},
	}
}

func socketAddress(addr string, port uint32) *corev3.Address {
	return &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
		Address:       addr,
		PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port},
	}}}
}

// mustAny packs a message; it only fails for a nil message, a programming
// error. The packed bytes are deterministic (maps in key order), so that
// equal configurations are equal byte for byte: the xDS versions are hashes
// of them, and identical virtual hosts are found by them.
func mustAny(m proto.Message) *anypb.Any {
	a := &anypb.Any{}
	if err := anypb.MarshalFrom(a, m, proto.MarshalOptions{Deterministic: true}); err != nil {
		panic(err)
	}
	return a
}
