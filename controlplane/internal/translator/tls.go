package translator

import (
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

const tlsTransportName = "envoy.transport_sockets.tls"

// downstreamTLS is the TLS context of a filter chain: the server
// certificate over SDS, TLS 1.2 to 1.3 unless narrowed, and the client
// certificate validation when cv is set.
func downstreamTLS(secret, minVersion, maxVersion string, cv *ir.ClientValidation) *corev3.TransportSocket {
	return downstreamTLSWithALPN(secret, minVersion, maxVersion, cv, []string{"h2", "http/1.1"})
}

// downstreamShape is what a TLS host's context is made of, when it has no
// client validation.
type downstreamShape struct{ secret, minVersion, maxVersion string }

// downstreamTLS is downstreamTLS(secret, minVersion, maxVersion, cv), the
// same message for the hosts of the same certificate and versions (a
// wildcard certificate's): a message is never modified once built. A
// host that validates clients gets its own.
func (e *chainParts) downstreamTLS(secret, minVersion, maxVersion string, cv *ir.ClientValidation) *corev3.TransportSocket {
	if e == nil || cv != nil {
		return downstreamTLS(secret, minVersion, maxVersion, cv)
	}
	s, _ := share(&e.mu, e.sockets, downstreamShape{secret, minVersion, maxVersion}, func() (*corev3.TransportSocket, bool) {
		return downstreamTLS(secret, minVersion, maxVersion, nil), true
	})
	return s
}

// downstreamTLSWithALPN is downstreamTLS advertising the ALPN protocols
// alpn (none for nil).
func downstreamTLSWithALPN(secret, minVersion, maxVersion string, cv *ir.ClientValidation, alpn []string) *corev3.TransportSocket {
	common := &tlsv3.CommonTlsContext{
		TlsParams: &tlsv3.TlsParameters{
			TlsMinimumProtocolVersion: tlsVersion(minVersion, tlsv3.TlsParameters_TLSv1_2),
			TlsMaximumProtocolVersion: tlsVersion(maxVersion, tlsv3.TlsParameters_TLSv1_3),
		},
		TlsCertificateSdsSecretConfigs: []*tlsv3.SdsSecretConfig{sdsSecret(secret)},
		AlpnProtocols:                  alpn,
	}
	ctx := &tlsv3.DownstreamTlsContext{CommonTlsContext: common}
	if cv != nil {
		ctx.RequireClientCertificate = wrapperspb.Bool(!cv.Optional)
		switch {
		case cv.SkipVerification && cv.CASecret != "":
			// Contour's "required but not verified" with a CA: Envoy
			// checks the chain against it and accepts it anyway.
			common.ValidationContextType = &tlsv3.CommonTlsContext_CombinedValidationContext{
				CombinedValidationContext: &tlsv3.CommonTlsContext_CombinedCertificateValidationContext{
					DefaultValidationContext: &tlsv3.CertificateValidationContext{
						TrustChainVerification: tlsv3.CertificateValidationContext_ACCEPT_UNTRUSTED,
					},
					ValidationContextSdsSecretConfig: sdsSecret(cv.CASecret),
				},
			}
		case cv.SkipVerification:
			common.ValidationContextType = &tlsv3.CommonTlsContext_ValidationContext{
				ValidationContext: &tlsv3.CertificateValidationContext{
					TrustChainVerification: tlsv3.CertificateValidationContext_ACCEPT_UNTRUSTED,
				},
			}
		default:
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

// upstreamTLS is the TLS context of a TLS cluster (h2 or tls): SNI, ALPN
// h2 for HTTP/2, with validation the CA over SDS and the SANs, and the
// client certificate over SDS when it has one.
func upstreamTLS(c *ir.Cluster) *corev3.TransportSocket {
	common := &tlsv3.CommonTlsContext{}
	if c.Protocol == ir.H2 {
		common.AlpnProtocols = []string{"h2"}
	}
	if v := c.Validation; v != nil {
		common.ValidationContextType = &tlsv3.CommonTlsContext_CombinedValidationContext{
			CombinedValidationContext: &tlsv3.CommonTlsContext_CombinedCertificateValidationContext{
				DefaultValidationContext: &tlsv3.CertificateValidationContext{
					MatchTypedSubjectAltNames: sanMatchers(v),
				},
				ValidationContextSdsSecretConfig: sdsSecret(v.CASecret),
			},
		}
	}
	if c.ClientSecret != "" {
		common.TlsCertificateSdsSecretConfigs = []*tlsv3.SdsSecretConfig{sdsSecret(c.ClientSecret)}
	}
	ctx := &tlsv3.UpstreamTlsContext{CommonTlsContext: common, Sni: c.SNI}
	return &corev3.TransportSocket{
		Name:       tlsTransportName,
		ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: mustAny(ctx)},
	}
}

// sanMatchers accept a certificate presenting any of the subject names as
// a DNS SAN, or any of the URIs as a URI SAN (Envoy ORs the matchers).
func sanMatchers(v *ir.UpstreamValidation) []*tlsv3.SubjectAltNameMatcher {
	names := v.SubjectNames
	if len(names) == 0 && len(v.SubjectURIs) == 0 {
		names = []string{v.SubjectName}
	}
	ms := make([]*tlsv3.SubjectAltNameMatcher, 0, len(names)+len(v.SubjectURIs))
	for _, n := range names {
		ms = append(ms, sanMatcher(tlsv3.SubjectAltNameMatcher_DNS, n))
	}
	for _, u := range v.SubjectURIs {
		ms = append(ms, sanMatcher(tlsv3.SubjectAltNameMatcher_URI, u))
	}
	return ms
}

// sanMatcher matches a SAN of type t that is exactly value.
func sanMatcher(t tlsv3.SubjectAltNameMatcher_SanType, value string) *tlsv3.SubjectAltNameMatcher {
	return &tlsv3.SubjectAltNameMatcher{
		SanType: t,
		Matcher: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: value}},
	}
}

// tlsVersion maps the API's "1.2" and "1.3"; anything else is def.
func tlsVersion(v string, def tlsv3.TlsParameters_TlsProtocol) tlsv3.TlsParameters_TlsProtocol {
	switch v {
	case "1.2":
		return tlsv3.TlsParameters_TLSv1_2
	case "1.3":
		return tlsv3.TlsParameters_TLSv1_3
	}
	return def
}

// sdsSecret refers to a secret served over ADS.
func sdsSecret(name string) *tlsv3.SdsSecretConfig {
	return &tlsv3.SdsSecretConfig{Name: name, SdsConfig: adsConfigSource()}
}
