package harness

import (
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/portcullis/portcullis/serverkit/certs"
)

// CA is a throwaway certificate authority for tests, on top of
// serverkit/certs with test-friendly (fail the test) errors.
type CA struct {
	CertPEM []byte
	ca      *certs.CA
}

// KeyPair is a certificate (PEM) and its private key (PKCS#8 PEM).
type KeyPair struct {
	CertPEM []byte
	KeyPEM  []byte
}

// NewCA creates a CA.
func NewCA(t testing.TB, commonName string) *CA {
	t.Helper()
	ca, err := certs.NewCA(commonName)
	if err != nil {
		t.Fatalf("NewCA: %v", err)
	}
	return &CA{CertPEM: ca.CertPEM(), ca: ca}
}

// Issue signs a leaf certificate for names, usable as a server and as a
// client certificate. Names that parse as IP addresses become IP SANs; the
// first name is also the common name.
func (ca *CA) Issue(t testing.TB, names ...string) *KeyPair {
	t.Helper()
	if len(names) == 0 {
		t.Fatalf("Issue: no names")
	}
	cert, key, err := ca.ca.IssueFor(names[0], names, x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth)
	if err != nil {
		t.Fatalf("Issue: %v", err)
	}
	return &KeyPair{CertPEM: cert, KeyPEM: key}
}

// Secret returns a kubernetes.io/tls Secret holding the pair (tls.crt,
// tls.key), as HTTPProxy's virtualhost.tls.secretName expects.
func (kp *KeyPair) Secret(namespace, name string) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{corev1.TLSCertKey: kp.CertPEM, corev1.TLSPrivateKeyKey: kp.KeyPEM},
	}
}

// Secret returns an Opaque Secret with the CA certificate under ca.crt, as
// upstream and client validation (caSecret) expect.
func (ca *CA) Secret(namespace, name string) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{"ca.crt": ca.CertPEM},
	}
}

// WriteFiles writes tls.crt and tls.key into a new temp dir and returns
// their paths, for servers that take --tls-cert/--tls-key flags.
func (kp *KeyPair) WriteFiles(t testing.TB) (certFile, keyFile string) {
	t.Helper()
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	writeFile(t, certFile, kp.CertPEM)
	writeFile(t, keyFile, kp.KeyPEM)
	return certFile, keyFile
}

// WriteFile writes ca.crt into a new temp dir and returns its path.
func (ca *CA) WriteFile(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ca.crt")
	writeFile(t, path, ca.CertPEM)
	return path
}

func writeFile(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// CRL is a PEM CRL of the CA revoking the pairs' certificates.
func (ca *CA) CRL(t testing.TB, revoked ...*KeyPair) []byte {
	t.Helper()
	var pems [][]byte
	for _, kp := range revoked {
		pems = append(pems, kp.CertPEM)
	}
	crl, err := ca.ca.CRL(pems...)
	if err != nil {
		t.Fatalf("CRL: %v", err)
	}
	return crl
}
