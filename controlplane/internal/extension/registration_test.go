package extension

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/portcullis/portcullis/extension/sdk"
)

func TestRegistrationValidate(t *testing.T) {
	ok := Registration{Name: "ext", Address: "ext:9443", Hooks: []Hook{HookPostRouteModify}, Resources: []schema.GroupVersionKind{retryPolicy}}
	tests := []struct {
		name string
		edit func(r *Registration)
		want []string // parts of the error; none: valid
	}{
		{name: "minimal", edit: func(*Registration) {}},
		{name: "everything", edit: func(r *Registration) {
			*r = Registration{Name: "ext", Resources: []schema.GroupVersionKind{retryPolicy}, BackendResources: []schema.GroupVersionKind{bucket}, Address: "ext:9443", TLS: &TLS{CAFile: "ca.pem", CertFile: "c.pem", KeyFile: "k.pem", ServerName: "ext"},
				Hooks: Hooks, Timeout: 2 * time.Second, FailurePolicy: FailOpen, MaxMessageSize: 1 << 20, PhaseBudget: 5 * time.Second, MaxConcurrency: 4}
		}},
		{name: "no address", edit: func(r *Registration) { r.Address = "" }, want: []string{"extension.address: required"}},
		{name: "cert without key", edit: func(r *Registration) { r.TLS = &TLS{CertFile: "c.pem"} }, want: []string{"certFile and keyFile go together"}},
		{name: "CA from a file and a Secret", edit: func(r *Registration) { r.TLS = &TLS{CAFile: "ca.pem", CASecret: "ns/ca"} }, want: []string{"caFile and caSecret are exclusive"}},
		{name: "client certificate from a file and a Secret", edit: func(r *Registration) {
			r.TLS = &TLS{CertFile: "c.pem", KeyFile: "k.pem", ClientSecret: "ns/c"}
		}, want: []string{"certFile and clientCertificateSecret are exclusive"}},
		{name: "Secret not namespace/name", edit: func(r *Registration) { r.TLS = &TLS{CASecret: "ca"} }, want: []string{`tls.caSecret: must be namespace/name, got "ca"`}},
		{name: "no hooks", edit: func(r *Registration) { r.Hooks = nil }, want: []string{"extension.hooks: subscribe to at least one"}},
		{name: "unknown hook", edit: func(r *Registration) { r.Hooks = []Hook{"PostEverything"} }, want: []string{`unknown hook "PostEverything"`}},
		{name: "hook twice", edit: func(r *Registration) { r.Hooks = []Hook{HookPostRouteModify, HookPostRouteModify} }, want: []string{"PostRouteModify listed twice"}},
		{name: "bad policy", edit: func(r *Registration) { r.FailurePolicy = "closed" }, want: []string{`"closed" is neither Closed nor Open`}},
		{name: "negatives", edit: func(r *Registration) { r.Timeout, r.MaxMessageSize, r.MaxConcurrency = -1, -1, -1 },
			want: []string{"extension.timeout", "extension.maxMessageSize", "extension.maxConcurrency"}},
		{name: "budget shorter than a call", edit: func(r *Registration) { r.Timeout, r.PhaseBudget = 2*time.Second, time.Second },
			want: []string{"extension.phaseBudget: 1s is shorter than the timeout of one call (2s)"}},
		{name: "budget shorter than the default timeout", edit: func(r *Registration) { r.PhaseBudget = time.Millisecond },
			want: []string{"shorter than the timeout of one call (1s)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := ok
			tc.edit(&r)
			err := r.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Validate: no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
	d := ok.withDefaults()
	if d.Timeout != time.Second || d.FailurePolicy != FailClosed || d.PhaseBudget != DefaultPhaseBudget || d.MaxMessageSize != DefaultMaxMessageSize || d.MaxConcurrency != DefaultMaxConcurrency {
		t.Errorf("defaults: %+v", d)
	}
}

// TestDialTLS calls an extension served over TLS with a client
// certificate, with the registration's files.
func TestDialTLS(t *testing.T) {
	dir := t.TempDir()
	caKey, caCert, caPEM := newCert(t, "test CA", nil, nil)
	writeFile(t, dir, "ca.pem", caPEM)
	srvKey, srvCert, _ := newCert(t, "ext.test", caCert, caKey)
	cliKey, _, cliPEM := newCert(t, "portcullis", caCert, caKey)
	writeFile(t, dir, "client.pem", cliPEM)
	writeFile(t, dir, "client-key.pem", keyPEM(t, cliKey))

	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	serverTLS := &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{srvCert.Raw}, PrivateKey: srvKey}},
		ClientAuth:   tls.RequireAndVerifyClientCert, ClientCAs: pool, MinVersion: tls.VersionTLS12,
	}
	addr, calls := serve(t, &sdk.Server{HTTPListenerModify: listenerBuffer}, grpc.Creds(credentials.NewTLS(serverTLS)))

	reg := Registration{Name: "ext", Address: addr, Hooks: []Hook{HookPostHTTPListenerModify},
		TLS: &TLS{CAFile: filepath.Join(dir, "ca.pem"), CertFile: filepath.Join(dir, "client.pem"), KeyFile: filepath.Join(dir, "client-key.pem"), ServerName: "ext.test"}}
	r := newRunner(t, reg)
	if out, failures := r.Apply(context.Background(), translate(t, fixtureYAML), Refs{}); out == nil || len(failures) > 0 {
		t.Fatalf("over TLS: %v", failures)
	}
	if calls.get(HookPostHTTPListenerModify) != 1 {
		t.Errorf("calls: %v", calls.n)
	}

	// The wrong server name: the handshake fails, the hook fails.
	reg.TLS.ServerName = "other.test"
	if _, failures := newRunner(t, reg).Apply(context.Background(), translate(t, fixtureYAML), Refs{}); len(failures) != 1 {
		t.Errorf("wrong server name: failures %v", failures)
	}

	// Files that are not there are Dial's error.
	reg.TLS.CAFile = filepath.Join(dir, "missing.pem")
	if _, err := Dial(reg); err == nil || !strings.Contains(err.Error(), "extension.tls.caFile") {
		t.Errorf("Dial with a missing CA file: %v", err)
	}
}

// newCert makes a key and a certificate for name, signed by parent (self-
// signed, a CA, when nil).
func newCert(t *testing.T, name string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*ecdsa.PrivateKey, *x509.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:    []string{name},
	}
	if parent == nil {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return key, cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func keyPEM(t *testing.T, k *ecdsa.PrivateKey) []byte {
	t.Helper()
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
}

func writeFile(t *testing.T, dir, name string, b []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
		t.Fatal(err)
	}
}
