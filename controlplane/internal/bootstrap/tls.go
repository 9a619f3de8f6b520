package bootstrap

import (
	"fmt"
	"net"
	"path/filepath"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// TLS connects Envoy to the xDS server over mutual TLS. Envoy reads its
// client certificate and the CA through SDS from files (path-based SDS):
// the bootstrap names two SDS files, which name the certificate files;
// Envoy watches the certificates' directories and loads rotated files
// (written atomically, as Kubernetes swaps a Secret volume's files) without
// a restart.
type TLS struct {
	// CertFile and KeyFile are Envoy's client certificate and key, in one
	// directory (a kubernetes.io/tls Secret's tls.crt and tls.key).
	CertFile, KeyFile string
	// CAFile is the CA bundle the xDS server's certificate must chain to.
	CAFile string
	// ServerName is sent as SNI and must be a subject alternative name of
	// the server's certificate (DNS, or IP when it is an address); empty:
	// the host of the xDS address.
	ServerName string
	// SDSDir is where the SDS files are (SDSFiles writes them).
	SDSDir string
}

// Names of the SDS secrets and files.
const (
	ClientCertificateSDSName = "xds_client_certificate"
	TrustedCASDSName         = "xds_trusted_ca"
	clientCertificateFile    = "xds-client-certificate.json"
	trustedCAFile            = "xds-trusted-ca.json"
)

func (t *TLS) validate(xdsHost string) error {
	if t.CertFile == "" || t.KeyFile == "" || t.CAFile == "" {
		return fmt.Errorf("xDS over mTLS needs the client certificate, its key and the CA (--xds-tls-cert, --xds-tls-key, --xds-tls-ca)")
	}
	for _, f := range []string{t.CertFile, t.KeyFile, t.CAFile, t.SDSDir} {
		if f == "" || !filepath.IsAbs(f) {
			return fmt.Errorf("xDS TLS: %q is not an absolute path (Envoy resolves paths from its own working directory)", f)
		}
	}
	if filepath.Dir(t.CertFile) != filepath.Dir(t.KeyFile) {
		return fmt.Errorf("xDS TLS: the client certificate and key must be in one directory (Envoy watches it to read them together), got %s and %s", t.CertFile, t.KeyFile)
	}
	if t.ServerName == "" {
		t.ServerName = xdsHost
	}
	return nil
}

// transportSocket is the xDS cluster's TLS, its secrets from the SDS files.
func (t *TLS) transportSocket() (*corev3.TransportSocket, error) {
	sni := t.ServerName
	if net.ParseIP(sni) != nil {
		sni = "" // SNI names hosts, never addresses
	}
	tc, err := anypb.New(&tlsv3.UpstreamTlsContext{
		Sni: sni,
		CommonTlsContext: &tlsv3.CommonTlsContext{
			AlpnProtocols:                  []string{"h2"},
			TlsCertificateSdsSecretConfigs: []*tlsv3.SdsSecretConfig{t.sds(ClientCertificateSDSName, clientCertificateFile)},
			ValidationContextType: &tlsv3.CommonTlsContext_ValidationContextSdsSecretConfig{
				ValidationContextSdsSecretConfig: t.sds(TrustedCASDSName, trustedCAFile),
			},
		},
	})
	if err != nil {
		return nil, err
	}
	return &corev3.TransportSocket{Name: "envoy.transport_sockets.tls", ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: tc}}, nil
}

func (t *TLS) sds(name, file string) *tlsv3.SdsSecretConfig {
	return &tlsv3.SdsSecretConfig{Name: name, SdsConfig: &corev3.ConfigSource{
		ResourceApiVersion: corev3.ApiVersion_V3,
		ConfigSourceSpecifier: &corev3.ConfigSource_PathConfigSource{PathConfigSource: &corev3.PathConfigSource{
			Path: filepath.Join(t.SDSDir, file),
		}},
	}}
}

// SDSFiles are the files the bootstrap's SDS configuration reads, by name
// in o.TLS.SDSDir; none without TLS.
func SDSFiles(o Options) (map[string][]byte, error) {
	if o.TLS == nil {
		return nil, nil
	}
	host, _, err := SplitHostPort(o.XDSAddress)
	if err != nil {
		return nil, fmt.Errorf("xds address: %w", err)
	}
	t := *o.TLS
	if err := t.validate(host); err != nil {
		return nil, err
	}
	sanType := matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: t.ServerName}}
	san := &tlsv3.SubjectAltNameMatcher{SanType: tlsv3.SubjectAltNameMatcher_DNS, Matcher: &sanType}
	if net.ParseIP(t.ServerName) != nil {
		san.SanType = tlsv3.SubjectAltNameMatcher_IP_ADDRESS
	}
	out := map[string][]byte{}
	for file, secret := range map[string]*tlsv3.Secret{
		clientCertificateFile: {Name: ClientCertificateSDSName, Type: &tlsv3.Secret_TlsCertificate{TlsCertificate: &tlsv3.TlsCertificate{
			CertificateChain: fileSource(t.CertFile),
			PrivateKey:       fileSource(t.KeyFile),
			WatchedDirectory: &corev3.WatchedDirectory{Path: filepath.Dir(t.CertFile)},
		}}},
		trustedCAFile: {Name: TrustedCASDSName, Type: &tlsv3.Secret_ValidationContext{ValidationContext: &tlsv3.CertificateValidationContext{
			TrustedCa:                 fileSource(t.CAFile),
			WatchedDirectory:          &corev3.WatchedDirectory{Path: filepath.Dir(t.CAFile)},
			MatchTypedSubjectAltNames: []*tlsv3.SubjectAltNameMatcher{san},
		}}},
	} {
		if err := secret.ValidateAll(); err != nil {
			return nil, err
		}
		b, err := sdsFile(secret)
		if err != nil {
			return nil, err
		}
		out[file] = b
	}
	return out, nil
}

// sdsFile is a path-based SDS file: a discovery response with the secret.
func sdsFile(secret proto.Message) ([]byte, error) {
	a, err := anypb.New(secret)
	if err != nil {
		return nil, err
	}
	return protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(&discoveryv3.DiscoveryResponse{Resources: []*anypb.Any{a}})
}

func fileSource(path string) *corev3.DataSource {
	return &corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: path}}
}
