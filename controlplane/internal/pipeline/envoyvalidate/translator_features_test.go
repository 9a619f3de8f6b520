package envoyvalidate

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/translator"
)

// TestEnvoyValidatesTranslatorFeatures translates a model that uses every
// feature the Gateway API brought to the IR (listeners of their own,
// wildcard hosts, regex and query matches, redirects, rewrites, direct
// responses, mirrors, per-try timeouts, route-level authorization and
// processing) and has the real Envoy load it. The goldens cannot show
// these yet: no input builds them.
//
// A weighted cluster naming a cluster the model does not have is valid
// over RDS, where Envoy does not check route clusters, but not in a
// static bootstrap, where it does by default: the model is validated
// without it as it is, then with it the way RDS loads it
// (validate_clusters off).
func TestEnvoyValidatesTranslatorFeatures(t *testing.T) {
	envoy := envoyBinary(t)
	for _, invalidBackend := range []bool{false, true} {
		res := translator.Translate(featureModel(t, invalidBackend), translator.Options{})
		if out, err := validateResources(t, envoy, res, invalidBackend); err != nil {
			t.Fatalf("Envoy rejects the translation (invalid backend: %v): %v\n%s", invalidBackend, err, out)
		}
	}
}

// featureModel uses every route feature on the shared listeners and on
// two Gateway listeners of their own ports.
func featureModel(t *testing.T, invalidBackend bool) *ir.Model {
	d := func(d time.Duration) *time.Duration { return &d }
	policy := func(name string) ir.Origins {
		return ir.NewOrigins(objects.Ref{Kind: "ExtAuthPolicy", Namespace: "default", Name: name})
	}
	authA := &ir.ExtAuth{Cluster: "extension/auth/authz", Authority: "authz.auth", Timeout: time.Second, Origins: policy("a")}
	// Same cluster, other settings: another filter.
	authB := &ir.ExtAuth{Cluster: "extension/auth/authz", Authority: "authz.auth", Timeout: 2 * time.Second, FailOpen: true, Origins: policy("b")}
	proc := &ir.ExtProc{Cluster: "extension/proc/processor", Authority: "processor.proc", Timeout: d(time.Second), Mode: &ir.ProcessingMode{RequestBody: "BUFFERED"}}
	backends := []ir.WeightedCluster{{Cluster: "service/default/a/80", Weight: 80}, {Cluster: "service/default/b/80", Weight: 20}}
	if invalidBackend {
		backends = append(backends, ir.WeightedCluster{Cluster: "service/default/missing/80", Weight: 10})
	}
	routes := func() []*ir.Route {
		a := []ir.WeightedCluster{{Cluster: "service/default/a/80", Weight: 1}}
		return []*ir.Route{
			{PathKind: ir.PathRegex, Path: `/v[0-9]+/.*`, Clusters: a, PerTryTimeout: d(500 * time.Millisecond), ResponseTimeout: d(5 * time.Second)},
			{PathKind: ir.PathExact, Path: "/search", Clusters: a,
				QueryParams: []ir.QueryParamMatch{{Name: "q", Kind: "exact", Value: "x"}, {Name: "page", Kind: "regex", Value: `[0-9]+`}, {Name: "debug", Kind: "present"}},
				Headers:     []ir.HeaderMatch{{Name: ":method", Kind: "exact", Value: "GET"}, {Name: "x-version", Kind: "regex", Value: `v[12]`}}},
			{Path: "/moved", Redirect: &ir.Redirect{Scheme: "https", Hostname: "b.example.com", Port: 8443, Path: &ir.PathRewrite{Value: "/new"}, StatusCode: 301}},
			{Path: "/old", Redirect: &ir.Redirect{Scheme: "https", Path: &ir.PathRewrite{Prefix: true, Value: "/"}}},
			{Path: "/gone", DirectResponse: &ir.DirectResponse{Status: 500, Body: "no valid backend"}},
			{Path: "/empty", DirectResponse: &ir.DirectResponse{Status: 204}},
			{Path: "/full", PathRewrite: &ir.PathRewrite{Value: "/replaced"}, Clusters: a},
			{Path: "/prefix", PathRewrite: &ir.PathRewrite{Prefix: true, Value: "/"}, Clusters: a},
			{Path: "/mirrored", Clusters: a, Mirrors: []ir.Mirror{{Cluster: "service/default/mirror/80", Percent: 100}, {Cluster: "service/default/b/80", Percent: 12.5}}},
			{Path: "/weighted", Clusters: backends},
			{Path: "/policy-a", Clusters: a, Auth: authA, AuthContext: map[string]string{"route": "a"}},
			{Path: "/policy-b", Clusters: a, Auth: authB},
			{Path: "/processed", Clusters: a, Processor: proc, Auth: authA},
			{Path: "/", Clusters: a},
		}
	}
	vhost := func(fqdn string) ir.VirtualHost { return ir.VirtualHost{FQDN: fqdn, Routes: routes()} }
	secure := func(fqdn string, auth *ir.ExtAuth) *ir.SecureVirtualHost {
		return &ir.SecureVirtualHost{VirtualHost: vhost(fqdn), Secret: "default/cert", Auth: auth, ExtProc: proc}
	}
	insecure := func(fqdn string) *ir.VirtualHost { vh := vhost(fqdn); return &vh }
	cert, key := selfSigned(t)
	m := &ir.Model{
		GlobalAuth:    &ir.ExtAuth{Cluster: "extension/auth/authz", Authority: "authz.auth"},
		GlobalExtProc: proc,
		Listeners: []*ir.Listener{
			{Name: ir.HTTPListenerName, Address: "0.0.0.0", Port: 8080, Insecure: []*ir.VirtualHost{insecure("a.example.com"), insecure("*.wild.example.com"), insecure("*")}},
			{
				Name: ir.HTTPSListenerName, Address: "0.0.0.0", Port: 8443, TLS: true,
				Secure:   []*ir.SecureVirtualHost{secure("a.example.com", authA), secure("*.wild.example.com", nil)},
				Fallback: &ir.FallbackChain{Secret: "default/cert", VirtualHosts: []*ir.VirtualHost{insecure("a.example.com")}},
			},
			{Name: "http-9080", Address: "0.0.0.0", Port: 9080, KeepHostPort: true, Insecure: []*ir.VirtualHost{insecure("g.example.com"), insecure("*")}},
			{Name: "https-9443", Address: "0.0.0.0", Port: 9443, TLS: true, KeepHostPort: true, Secure: []*ir.SecureVirtualHost{secure("g.example.com", authB), secure("*.example.com", nil), secure("*", nil)}},
		},
		Secrets: []*ir.Secret{{Name: "default/cert", Cert: cert, Key: key}},
	}
	for _, name := range []string{"service/default/a/80", "service/default/b/80", "service/default/mirror/80"} {
		m.Clusters = append(m.Clusters, &ir.Cluster{Name: name, ConnectTimeout: time.Second, Endpoints: []ir.Endpoint{{Address: "127.0.0.1", Port: 8000}}})
	}
	for _, name := range []string{"extension/auth/authz", "extension/proc/processor"} {
		m.Clusters = append(m.Clusters, &ir.Cluster{Name: name, Protocol: ir.H2C, ConnectTimeout: time.Second, Endpoints: []ir.Endpoint{{Address: "127.0.0.1", Port: 9000}}})
	}
	return m
}

// selfSigned is a throwaway certificate and key, PEM.
func selfSigned(t *testing.T) (cert, key []byte) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "example.com"},
		DNSNames:     []string{"example.com", "*.example.com"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
}
