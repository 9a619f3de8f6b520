package translator

import (
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/proto"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

func TestDownstreamTLS(t *testing.T) {
	for _, tc := range []struct {
		name             string
		minV, maxV       string
		cv               *ir.ClientValidation
		wantMin, wantMax tlsv3.TlsParameters_TlsProtocol
		// wantRequire is require_client_certificate (nil: unset);
		// wantCA the validation secret, wantUntrusted ACCEPT_UNTRUSTED.
		wantRequire   *bool
		wantCA        string
		wantUntrusted bool
	}{
		{name: "defaults: TLS 1.2 to 1.3, no client certificate",
			wantMin: tlsv3.TlsParameters_TLSv1_2, wantMax: tlsv3.TlsParameters_TLSv1_3},
		{name: "1.3 only", minV: "1.3", maxV: "1.3",
			wantMin: tlsv3.TlsParameters_TLSv1_3, wantMax: tlsv3.TlsParameters_TLSv1_3},
		{name: "client certificates verified against a CA", cv: &ir.ClientValidation{CASecret: "default/ca"},
			wantMin: tlsv3.TlsParameters_TLSv1_2, wantMax: tlsv3.TlsParameters_TLSv1_3, wantRequire: ptr(true), wantCA: "default/ca"},
		{name: "optional, unverified client certificates", cv: &ir.ClientValidation{SkipVerification: true, Optional: true},
			wantMin: tlsv3.TlsParameters_TLSv1_2, wantMax: tlsv3.TlsParameters_TLSv1_3, wantRequire: ptr(false), wantUntrusted: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := &tlsv3.DownstreamTlsContext{}
			unpack(t, downstreamTLS("default/cert", tc.minV, tc.maxV, tc.cv), ctx)
			common := ctx.GetCommonTlsContext()
			if p := common.GetTlsParams(); p.GetTlsMinimumProtocolVersion() != tc.wantMin || p.GetTlsMaximumProtocolVersion() != tc.wantMax {
				t.Errorf("versions: got %v", p)
			}
			if s := common.GetTlsCertificateSdsSecretConfigs(); len(s) != 1 || s[0].GetName() != "default/cert" || s[0].GetSdsConfig().GetAds() == nil {
				t.Errorf("certificate: got %v, want default/cert over ADS", s)
			}
			if got := ctx.GetRequireClientCertificate(); (got == nil) != (tc.wantRequire == nil) || got != nil && got.GetValue() != *tc.wantRequire {
				t.Errorf("require_client_certificate: got %v, want %v", got, tc.wantRequire)
			}
			if got := common.GetValidationContextSdsSecretConfig().GetName(); got != tc.wantCA {
				t.Errorf("validation secret: got %q, want %q", got, tc.wantCA)
			}
			untrusted := common.GetValidationContext().GetTrustChainVerification() == tlsv3.CertificateValidationContext_ACCEPT_UNTRUSTED
			if untrusted != tc.wantUntrusted {
				t.Errorf("ACCEPT_UNTRUSTED: got %v, want %v", untrusted, tc.wantUntrusted)
			}
		})
	}
}

func TestUpstreamTLS(t *testing.T) {
	for _, tc := range []struct {
		name     string
		c        ir.Cluster
		wantALPN []string
		wantCA   string
	}{
		{"tls: no ALPN", ir.Cluster{Protocol: ir.TLS, SNI: "a.example.com"}, nil, ""},
		{"h2: ALPN h2", ir.Cluster{Protocol: ir.H2, SNI: "a.example.com"}, []string{"h2"}, ""},
		{"validated", ir.Cluster{Protocol: ir.TLS, SNI: "a.example.com", Validation: &ir.UpstreamValidation{CASecret: "default/ca", SubjectName: "a.example.com"}}, nil, "default/ca"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := &tlsv3.UpstreamTlsContext{}
			unpack(t, upstreamTLS(&tc.c), ctx)
			if ctx.GetSni() != tc.c.SNI {
				t.Errorf("SNI: got %q, want %q", ctx.GetSni(), tc.c.SNI)
			}
			if got := ctx.GetCommonTlsContext().GetAlpnProtocols(); len(got) != len(tc.wantALPN) || len(got) > 0 && got[0] != tc.wantALPN[0] {
				t.Errorf("ALPN: got %v, want %v", got, tc.wantALPN)
			}
			cv := ctx.GetCommonTlsContext().GetCombinedValidationContext()
			if got := cv.GetValidationContextSdsSecretConfig().GetName(); got != tc.wantCA {
				t.Errorf("CA: got %q, want %q", got, tc.wantCA)
			}
			if tc.wantCA != "" {
				san := cv.GetDefaultValidationContext().GetMatchTypedSubjectAltNames()
				if len(san) != 1 || san[0].GetSanType() != tlsv3.SubjectAltNameMatcher_DNS || san[0].GetMatcher().GetExact() != tc.c.Validation.SubjectName {
					t.Errorf("SAN match: got %v, want DNS %s exactly", san, tc.c.Validation.SubjectName)
				}
			}
		})
	}
}

func unpack(t *testing.T, ts *corev3.TransportSocket, into proto.Message) {
	t.Helper()
	if ts.GetName() != tlsTransportName {
		t.Fatalf("transport socket %q, want %s", ts.GetName(), tlsTransportName)
	}
	if err := ts.GetTypedConfig().UnmarshalTo(into); err != nil {
		t.Fatal(err)
	}
}

func ptr[T any](v T) *T { return &v }

// TestSharedDownstreamTLS: hosts of the same certificate and versions get
// one context, the one downstreamTLS makes; any difference, or client
// validation, gets a context of its own.
func TestSharedDownstreamTLS(t *testing.T) {
	parts := newChainParts()
	type host struct {
		secret, minV, maxV string
		cv                 *ir.ClientValidation
	}
	hosts := []host{
		{secret: "default/wildcard"}, {secret: "default/wildcard"}, {secret: "default/other"},
		{secret: "default/wildcard", minV: "1.3"}, {secret: "default/wildcard", maxV: "1.2"},
		{secret: "default/wildcard", cv: &ir.ClientValidation{CASecret: "default/ca"}},
		{secret: "default/wildcard", cv: &ir.ClientValidation{CASecret: "default/ca"}},
	}
	got := make([]*corev3.TransportSocket, len(hosts))
	for i, h := range hosts {
		got[i] = parts.downstreamTLS(h.secret, h.minV, h.maxV, h.cv)
		if want := downstreamTLS(h.secret, h.minV, h.maxV, h.cv); !proto.Equal(got[i], want) {
			t.Errorf("host %d: got %v, want %v", i, got[i], want)
		}
	}
	for i := range hosts {
		for j := range i {
			same := hosts[i].cv == nil && hosts[j].cv == nil && hosts[i] == hosts[j]
			if shared := got[i] == got[j]; shared != same {
				t.Errorf("hosts %d and %d: one message %t, want %t", j, i, shared, same)
			}
		}
	}
}
