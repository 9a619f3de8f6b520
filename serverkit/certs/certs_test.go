package certs_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/portcullis/portcullis/serverkit/certs"
)

func parse(t *testing.T, certPEM []byte) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(certPEM)
	if block == nil {
		t.Fatal("no PEM block")
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestIssueVerifies(t *testing.T) {
	ca, err := certs.NewCA("test-ca")
	if err != nil {
		t.Fatal(err)
	}
	if c := parse(t, ca.CertPEM()); !c.IsCA || c.Subject.CommonName != "test-ca" {
		t.Fatalf("CA certificate: IsCA=%v CN=%q", c.IsCA, c.Subject.CommonName)
	}

	serverPEM, keyPEM, err := ca.Issue("authserver", []string{"authserver.example", "127.0.0.1"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tls.X509KeyPair(serverPEM, keyPEM); err != nil {
		t.Fatalf("server key pair: %v", err)
	}
	server := parse(t, serverPEM)
	for _, host := range []string{"authserver.example", "127.0.0.1"} {
		if _, err := server.Verify(x509.VerifyOptions{DNSName: host, Roots: ca.Pool()}); err != nil {
			t.Errorf("server certificate for %s: %v", host, err)
		}
	}

	clientPEM, _, err := ca.Issue("envoy", nil, true)
	if err != nil {
		t.Fatal(err)
	}
	client := parse(t, clientPEM)
	if _, err := client.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client certificate: %v", err)
	}
	if _, err := client.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err == nil {
		t.Error("client certificate is valid for server auth")
	}

	other, _ := certs.NewCA("other")
	if _, err := server.Verify(x509.VerifyOptions{Roots: other.Pool()}); err == nil {
		t.Error("server certificate verifies against an unrelated CA")
	}
}

func TestWriteFiles(t *testing.T) {
	ca, err := certs.NewCA("test-ca")
	if err != nil {
		t.Fatal(err)
	}
	f, err := ca.WriteFiles(t.TempDir(), "localhost", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	for _, pair := range [][2]string{{f.ServerCert, f.ServerKey}, {f.ClientCert, f.ClientKey}} {
		if _, err := tls.LoadX509KeyPair(pair[0], pair[1]); err != nil {
			t.Errorf("%s: %v", pair[0], err)
		}
		if st, err := os.Stat(pair[1]); err != nil {
			t.Error(err)
		} else if st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", pair[1], st.Mode().Perm())
		}
	}
	if b, err := os.ReadFile(f.CA); err != nil || string(b) != string(ca.CertPEM()) {
		t.Errorf("ca.crt does not hold the CA certificate (err %v)", err)
	}
	if got := parse(t, mustRead(t, f.ServerCert)).Subject.CommonName; got != "localhost" {
		t.Errorf("server CN = %q, want localhost", got)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// CRL revokes exactly the certificates given, signed by the CA, current.
func TestCRL(t *testing.T) {
	ca, err := certs.NewCA("test-ca")
	if err != nil {
		t.Fatal(err)
	}
	revoked, _, err := ca.Issue("revoked", nil, true)
	if err != nil {
		t.Fatal(err)
	}
	kept, _, err := ca.Issue("kept", nil, true)
	if err != nil {
		t.Fatal(err)
	}
	crlPEM, err := ca.CRL(revoked)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(crlPEM)
	if block == nil || block.Type != "X509 CRL" {
		t.Fatalf("CRL PEM block %v", block)
	}
	crl, err := x509.ParseRevocationList(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if err := crl.CheckSignatureFrom(parse(t, ca.CertPEM())); err != nil {
		t.Fatalf("CRL not signed by the CA: %v", err)
	}
	if now := time.Now(); now.Before(crl.ThisUpdate) || now.After(crl.NextUpdate) {
		t.Errorf("CRL valid %v to %v, not now", crl.ThisUpdate, crl.NextUpdate)
	}
	if len(crl.RevokedCertificateEntries) != 1 || crl.RevokedCertificateEntries[0].SerialNumber.Cmp(parse(t, revoked).SerialNumber) != 0 {
		t.Errorf("revoked entries %v, want the serial of %q only", crl.RevokedCertificateEntries, "revoked")
	}
	if parse(t, kept).SerialNumber.Cmp(parse(t, revoked).SerialNumber) == 0 {
		t.Fatal("two certificates with one serial")
	}
	if _, err := ca.CRL([]byte("not PEM")); err == nil {
		t.Error("CRL accepted a revoked certificate that is not PEM")
	}
}

// Each WriteSecretDir is a new version of every file, read through the
// names' links.
func TestWriteSecretDir(t *testing.T) {
	dir := t.TempDir()
	for _, content := range []string{"one", "two"} {
		if err := certs.WriteSecretDir(dir, map[string][]byte{"tls.crt": []byte(content + " crt"), "tls.key": []byte(content + " key")}); err != nil {
			t.Fatal(err)
		}
		for name, want := range map[string]string{"tls.crt": content + " crt", "tls.key": content + " key"} {
			got, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil || string(got) != want {
				t.Errorf("%s = %q, %v; want %q", name, got, err, want)
			}
			if fi, err := os.Lstat(filepath.Join(dir, name)); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Errorf("%s is not a symbolic link (%v)", name, err)
			}
		}
	}
}

func TestIssueOrg(t *testing.T) {
	ca, err := certs.NewCA("test-ca")
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := ca.IssueOrg("system:node:n", []string{"system:nodes", "system:masters"}, []string{"10.0.0.1"},
		x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
		t.Fatalf("key pair: %v", err)
	}
	c := parse(t, certPEM)
	if got := c.Subject.Organization; len(got) != 2 || got[0] != "system:nodes" || got[1] != "system:masters" {
		t.Errorf("organizations %v, want [system:nodes system:masters]", got)
	}
	if c.Subject.CommonName != "system:node:n" {
		t.Errorf("CN %q", c.Subject.CommonName)
	}
	for _, u := range []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth} {
		if _, err := c.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{u}}); err != nil {
			t.Errorf("usage %v: %v", u, err)
		}
	}
	// nil keeps the default organization.
	certPEM, _, err = ca.IssueOrg("client", nil, nil, x509.ExtKeyUsageClientAuth)
	if err != nil {
		t.Fatal(err)
	}
	if got := parse(t, certPEM).Subject.Organization; len(got) != 1 || got[0] != "Portcullis test" {
		t.Errorf("default organizations %v", got)
	}
}
