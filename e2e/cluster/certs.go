package cluster

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/portcullis/portcullis/serverkit/certs"
)

// pki is the cluster's one CA, which signs every serving and client
// certificate; the files are under dir.
type pki struct {
	dir string
	ca  *certs.CA
}

// newPKI creates the CA and writes its certificate, ca.crt, under dir.
func newPKI(dir string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	ca, err := certs.NewCA("portcullis-cluster-ca")
	if err != nil {
		return nil, err
	}
	p := &pki{dir: dir, ca: ca}
	return p, os.WriteFile(p.path("ca.crt"), ca.CertPEM(), 0o644)
}

func (p *pki) path(name string) string { return filepath.Join(p.dir, name) }

// issue writes NAME.crt and NAME.key: a client certificate for the common
// name and organizations (Kubernetes groups), also serving the DNS names
// and IPs in hosts when any.
func (p *pki) issue(name, cn string, orgs []string, hosts ...string) error {
	usages := []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	if len(hosts) > 0 {
		usages = append(usages, x509.ExtKeyUsageServerAuth)
	}
	// Non-nil: no organization but these (nil would be certs' default).
	orgs = append([]string{}, orgs...)
	certPEM, keyPEM, err := p.ca.IssueOrg(cn, orgs, hosts, usages...)
	if err != nil {
		return err
	}
	if err := os.WriteFile(p.path(name+".crt"), certPEM, 0o644); err != nil {
		return err
	}
	return os.WriteFile(p.path(name+".key"), keyPEM, 0o600)
}

// serviceAccountKey writes sa.key, the key the API server signs service
// account tokens with (and the controller manager's token controller).
func (p *pki) serviceAccountKey() error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	b := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	return os.WriteFile(p.path("sa.key"), b, 0o600)
}

// kubeconfig writes a kubeconfig for the client certificate NAME.
func (p *pki) kubeconfig(path, name, server string) error {
	return clientcmd.WriteToFile(clientcmdapi.Config{
		Clusters: map[string]*clientcmdapi.Cluster{"portcullis": {Server: server, CertificateAuthority: p.path("ca.crt")}},
		AuthInfos: map[string]*clientcmdapi.AuthInfo{name: {
			ClientCertificate: p.path(name + ".crt"), ClientKey: p.path(name + ".key"),
		}},
		Contexts:       map[string]*clientcmdapi.Context{"portcullis": {Cluster: "portcullis", AuthInfo: name}},
		CurrentContext: "portcullis",
	}, path)
}
