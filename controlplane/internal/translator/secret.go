package translator

import (
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/proto"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

func secret(s *ir.Secret) *tlsv3.Secret {
	if s.CA != nil {
		vc := &tlsv3.CertificateValidationContext{TrustedCa: inlineBytes(s.CA)}
		if s.CRL != nil {
			vc.Crl = inlineBytes(s.CRL)
			vc.OnlyVerifyLeafCertCrl = s.OnlyVerifyLeafCRL
		}
		return &tlsv3.Secret{Name: s.Name, Type: &tlsv3.Secret_ValidationContext{ValidationContext: vc}}
	}
	return &tlsv3.Secret{Name: s.Name, Type: &tlsv3.Secret_TlsCertificate{TlsCertificate: &tlsv3.TlsCertificate{
		CertificateChain: inlineBytes(s.Cert),
		PrivateKey:       inlineBytes(s.Key),
	}}}
}

func inlineBytes(b []byte) *corev3.DataSource {
	return &corev3.DataSource{Specifier: &corev3.DataSource_InlineBytes{InlineBytes: b}}
}

// Redacted returns a copy of a secret list with private keys replaced, for
// output meant for people (portcullis translate, the admin endpoint).
func Redacted(secrets []proto.Message) []proto.Message {
	out := make([]proto.Message, 0, len(secrets))
	for _, m := range secrets {
		if s, ok := m.(*tlsv3.Secret); ok && s.GetTlsCertificate() != nil {
			tc := s.GetTlsCertificate()
			m = &tlsv3.Secret{Name: s.Name, Type: &tlsv3.Secret_TlsCertificate{TlsCertificate: &tlsv3.TlsCertificate{
				CertificateChain: tc.CertificateChain,
				PrivateKey:       &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: "[redacted]"}},
			}}}
		}
		out = append(out, m)
	}
	return out
}
