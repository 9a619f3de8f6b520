// Package certs issues throwaway X.509 certificates for tests and demos: a
// self-signed CA plus server and client certificates signed by it. It does
// not depend on package testing so that harnesses and demo scripts can use
// it too. Never use these certificates in production.
package certs

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Validity of every certificate; the backdating tolerates clock skew.
const (
	validFor = 365 * 24 * time.Hour
	backdate = time.Hour
)

// CA is an in-memory certificate authority.
type CA struct {
	cert    *x509.Certificate
	key     crypto.Signer
	certPEM []byte
}

// NewCA creates a self-signed ECDSA P-256 CA.
func NewCA(commonName string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl, err := template(commonName)
	if err != nil {
		return nil, err
	}
	tmpl.IsCA = true
	tmpl.BasicConstraintsValid = true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{cert: cert, key: key, certPEM: encodeCert(der)}, nil
}

// CertPEM is the CA certificate in PEM form (what --tls-ca-path and Envoy's
// validation context want).
func (ca *CA) CertPEM() []byte { return append([]byte(nil), ca.certPEM...) }

// Pool is a CertPool holding only this CA.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// Issue signs a new leaf certificate. hosts become subject alternative
// names: entries that parse as IP addresses are IP SANs, the rest DNS SANs.
// client selects client authentication usage instead of server
// authentication. It returns PEM certificate and PKCS#8 PEM key.
func (ca *CA) Issue(commonName string, hosts []string, client bool) (certPEM, keyPEM []byte, err error) {
	if client {
		return ca.IssueFor(commonName, hosts, x509.ExtKeyUsageClientAuth)
	}
	return ca.IssueFor(commonName, hosts, x509.ExtKeyUsageServerAuth)
}

// IssueFor is Issue with explicit extended key usages, e.g. both server and
// client authentication for a test peer that is both.
func (ca *CA) IssueFor(commonName string, hosts []string, usages ...x509.ExtKeyUsage) (certPEM, keyPEM []byte, err error) {
	return ca.IssueOrg(commonName, nil, hosts, usages...)
}

// IssueOrg is IssueFor with the subject's organizations (nil keeps the
// default), which Kubernetes reads as a client certificate's groups.
func (ca *CA) IssueOrg(commonName string, orgs, hosts []string, usages ...x509.ExtKeyUsage) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl, err := template(commonName)
	if err != nil {
		return nil, nil, err
	}
	if orgs != nil {
		tmpl.Subject.Organization = orgs
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.ExtKeyUsage = usages
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return encodeCert(der), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), nil
}

// IssueTLS is Issue returning a tls.Certificate, handy for in-process
// clients and servers.
func (ca *CA) IssueTLS(commonName string, hosts []string, client bool) (tls.Certificate, error) {
	certPEM, keyPEM, err := ca.Issue(commonName, hosts, client)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(certPEM, keyPEM)
}

// Files are the paths written by WriteFiles.
type Files struct {
	CA         string // ca.crt
	ServerCert string // server.crt
	ServerKey  string // server.key
	ClientCert string // client.crt
	ClientKey  string // client.key
}

// WriteFiles writes the CA certificate, a server certificate for
// serverHosts (CN = first host) and a client certificate (CN "client") into
// dir, which must exist. Keys are written with mode 0600.
func (ca *CA) WriteFiles(dir string, serverHosts ...string) (Files, error) {
	f := Files{
		CA:         filepath.Join(dir, "ca.crt"),
		ServerCert: filepath.Join(dir, "server.crt"),
		ServerKey:  filepath.Join(dir, "server.key"),
		ClientCert: filepath.Join(dir, "client.crt"),
		ClientKey:  filepath.Join(dir, "client.key"),
	}
	cn := "server"
	if len(serverHosts) > 0 {
		cn = serverHosts[0]
	}
	sc, sk, err := ca.Issue(cn, serverHosts, false)
	if err != nil {
		return Files{}, err
	}
	cc, ck, err := ca.Issue("client", nil, true)
	if err != nil {
		return Files{}, err
	}
	for _, w := range []struct {
		path string
		data []byte
		mode os.FileMode
	}{
		{f.CA, ca.certPEM, 0o644},
		{f.ServerCert, sc, 0o644},
		{f.ServerKey, sk, 0o600},
		{f.ClientCert, cc, 0o644},
		{f.ClientKey, ck, 0o600},
	} {
		if err := os.WriteFile(w.path, w.data, w.mode); err != nil {
			return Files{}, fmt.Errorf("writing %s: %w", w.path, err)
		}
	}
	return f, nil
}

func template(commonName string) (*x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	now := time.Now()
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: commonName, Organization: []string{"Portcullis test"}},
		NotBefore:    now.Add(-backdate),
		NotAfter:     now.Add(validFor),
	}, nil
}

func encodeCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// CRL is a PEM X509 CRL signed by the CA revoking the certificates (PEM),
// valid from the backdated now for validFor.
func (ca *CA) CRL(revokedPEM ...[]byte) ([]byte, error) {
	now := time.Now()
	var entries []x509.RevocationListEntry
	for _, p := range revokedPEM {
		blk, _ := pem.Decode(p)
		if blk == nil {
			return nil, fmt.Errorf("CRL: not a PEM certificate")
		}
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			return nil, err
		}
		entries = append(entries, x509.RevocationListEntry{SerialNumber: c.SerialNumber, RevocationTime: now.Add(-backdate)})
	}
	der, err := x509.CreateRevocationList(rand.Reader, &x509.RevocationList{
		Number:                    big.NewInt(now.UnixNano()),
		ThisUpdate:                now.Add(-backdate),
		NextUpdate:                now.Add(validFor),
		RevokedCertificateEntries: entries,
	}, ca.cert, ca.key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "X509 CRL", Bytes: der}), nil
}
