package extension

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// SecretLookup finds a Secret of the last build's objects; nil when there
// is none.
type SecretLookup func(namespace, name string) *corev1.Secret

// secretTLS is the TLS material of a registration that names Secrets
// (tls.caSecret, tls.clientCertificateSecret), as Envoy Gateway's
// certificateRef does: the latest of each, taken from the objects of every
// build (Runner.SetSecrets) and read at every handshake, so that a
// rotated Secret is used by the next connection without a restart.
type secretTLS struct {
	caRef, clientRef string // namespace/name
	w                string // where the registration was written

	mu      sync.Mutex
	pool    *x509.CertPool
	cert    *tls.Certificate
	problem error // why the last SetSecrets could not use them
}

func newSecretTLS(t *TLS, w string) *secretTLS {
	if t == nil || t.CASecret == "" && t.ClientSecret == "" {
		return nil
	}
	return &secretTLS{caRef: t.CASecret, clientRef: t.ClientSecret, w: w, problem: errors.New("the Secrets were not read yet")}
}

// set reads the Secrets through lookup.
func (s *secretTLS) set(lookup SecretLookup) {
	var pool *x509.CertPool
	var cert *tls.Certificate
	var problems []error
	get := func(field, ref string) *corev1.Secret {
		ns, name, _ := strings.Cut(ref, "/")
		sec := lookup(ns, name)
		if sec == nil {
			problems = append(problems, fmt.Errorf("%s.tls.%s: Secret %s not found", s.w, field, ref))
		}
		return sec
	}
	if s.caRef != "" {
		if sec := get("caSecret", s.caRef); sec != nil {
			pool = x509.NewCertPool()
			if !pool.AppendCertsFromPEM(sec.Data["ca.crt"]) {
				problems = append(problems, fmt.Errorf("%s.tls.caSecret: Secret %s has no PEM certificate under ca.crt", s.w, s.caRef))
			}
		}
	}
	if s.clientRef != "" {
		if sec := get("clientCertificateSecret", s.clientRef); sec != nil {
			c, err := tls.X509KeyPair(sec.Data[corev1.TLSCertKey], sec.Data[corev1.TLSPrivateKeyKey])
			if err != nil {
				problems = append(problems, fmt.Errorf("%s.tls.clientCertificateSecret: Secret %s: %w", s.w, s.clientRef, err))
			} else {
				cert = &c
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pool, s.cert, s.problem = pool, cert, errors.Join(problems...)
}

// apply makes c use the Secrets: the CAs verify the extension's
// certificate against the name the client asked for, the client
// certificate answers a request for one.
func (s *secretTLS) apply(c *tls.Config) {
	if s.caRef != "" {
		// Verified in VerifyConnection against the Secret's CAs of the
		// moment, which a fixed RootCAs could not follow.
		c.InsecureSkipVerify = true //nolint:gosec // verified below, against the Secret's CAs
		c.VerifyConnection = s.verify
	}
	if s.clientRef != "" {
		c.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.cert == nil {
				return nil, s.problem
			}
			return s.cert, nil
		}
	}
}

func (s *secretTLS) verify(cs tls.ConnectionState) error {
	s.mu.Lock()
	pool, problem := s.pool, s.problem
	s.mu.Unlock()
	if pool == nil {
		return problem
	}
	if len(cs.PeerCertificates) == 0 {
		return errors.New("the extension presented no certificate")
	}
	inter := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter, DNSName: cs.ServerName})
	if err != nil {
		return fmt.Errorf("the extension's certificate, against %s.tls.caSecret %s: %w", s.w, s.caRef, err)
	}
	return nil
}
