package cluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
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

// pki is the cluster's one CA, which signs every serving and client
// certificate.
type pki struct {
	dir  string
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// newPKI creates the CA under dir (ca.crt, ca.key).
func newPKI(dir string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "portcullis-cluster-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, _ := x509.ParseCertificate(der)
	p := &pki{dir: dir, cert: cert, key: key}
	if err := writePEM(p.path("ca.crt"), "CERTIFICATE", der); err != nil {
		return nil, err
	}
	return p, p.writeKey("ca.key", key)
}

func (p *pki) path(name string) string { return filepath.Join(p.dir, name) }

func (p *pki) writeKey(name string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	return writePEM(p.path(name), "EC PRIVATE KEY", der)
}

// issue writes NAME.crt and NAME.key: a certificate for the common name
// and organizations, serving the DNS names and IPs in hosts when any.
func (p *pki) issue(name, cn string, orgs []string, hosts ...string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if len(hosts) > 0 {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
		for _, h := range hosts {
			if ip := net.ParseIP(h); ip != nil {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			} else {
				tmpl.DNSNames = append(tmpl.DNSNames, h)
			}
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.cert, &key.PublicKey, p.key)
	if err != nil {
		return err
	}
	if err := writePEM(p.path(name+".crt"), "CERTIFICATE", der); err != nil {
		return err
	}
	return p.writeKey(name+".key", key)
}

// serviceAccountKey writes sa.key, the key the API server signs service
// account tokens with (and the controller manager's token controller).
func (p *pki) serviceAccountKey() error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	return writePEM(p.path("sa.key"), "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(key))
}

// kubeconfig writes a kubeconfig for the client certificate NAME.
func (p *pki) kubeconfig(path, name, server string) error {
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: portcullis
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: %s
  user:
    client-certificate: %s
    client-key: %s
contexts:
- name: portcullis
  context:
    cluster: portcullis
    user: %s
current-context: portcullis
`, server, p.path("ca.crt"), name, p.path(name+".crt"), p.path(name+".key"), name)
	return os.WriteFile(path, []byte(kc), 0o600)
}

func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}
