package core

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// Secret problems, told apart so that status reasons can say which.
var (
	errSecretNotFound  = errors.New("not found")
	errNotDelegated    = errors.New("certificate delegation not permitted")
	errSecretMalformed = errors.New("malformed")
)

// CAKey is the key of a CA bundle in a Secret.
const CAKey = "ca.crt"

// TLSSecret resolves a server certificate Secret ("name" or
// "namespace/name") for an object in namespace, checking delegation, and
// records its use; it returns the SDS secret's name.
func (b Stage) TLSSecret(ref, namespace string) (string, error) {
	s, err := b.R.tlsSecret(ref, namespace)
	if err != nil {
		return "", err
	}
	b.Out.UseSecret(s)
	return s.Name, nil
}

// tlsSecret resolves a server certificate Secret. The Secret's lookup is
// recorded for every root; its checks are made once per build.
func (r *Resolver) tlsSecret(ref, namespace string) (*ir.Secret, error) {
	key := SplitRef(ref, namespace)
	if key.Namespace != namespace && !r.Delegated(key, namespace) {
		return nil, errNotDelegated
	}
	return r.Certificate(key)
}

// Certificate reads and checks the TLS Secret key, whoever may use it
// (the caller decides: delegations, ReferenceGrants).
func (r *Resolver) Certificate(key types.NamespacedName) (*ir.Secret, error) {
	s := r.secret(key)
	p, ok := r.Snap.tlsCache[key]
	if !ok {
		p.secret, p.err = parseTLSSecret(key, s)
		r.Snap.tlsCache[key] = p
	}
	return p.secret, p.err
}

// parsedSecret is the outcome of checking one TLS Secret.
type parsedSecret struct {
	secret *ir.Secret
	err    error
}

func parseTLSSecret(key types.NamespacedName, s *corev1.Secret) (*ir.Secret, error) {
	if s == nil {
		return nil, errSecretNotFound
	}
	cert, keyPEM := secretData(s, corev1.TLSCertKey), secretData(s, corev1.TLSPrivateKeyKey)
	if len(cert) == 0 || len(keyPEM) == 0 {
		return nil, fmt.Errorf("%w: it needs the keys %s and %s", errSecretMalformed, corev1.TLSCertKey, corev1.TLSPrivateKeyKey)
	}
	if _, err := tls.X509KeyPair(cert, keyPEM); err != nil {
		return nil, fmt.Errorf("%w: %v", errSecretMalformed, err)
	}
	return &ir.Secret{Name: key.Namespace + "/" + key.Name, Cert: cert, Key: keyPEM}, nil
}

// caSecret resolves a CA bundle Secret into an SDS validation secret and
// records its use; it returns the SDS secret's name.
func (b Stage) caSecret(ref, namespace string) (string, error) {
	s, err := b.R.CASecret(ref, namespace)
	if err != nil {
		return "", err
	}
	b.Out.UseSecret(s)
	return s.Name, nil
}

// CASecret resolves a CA certificate Secret ("name" or "namespace/name",
// its ca.crt), delegated like a server certificate.
func (r *Resolver) CASecret(ref, namespace string) (*ir.Secret, error) {
	if ref == "" {
		return nil, errors.New("caSecret is required")
	}
	key := SplitRef(ref, namespace)
	if key.Namespace != namespace && !r.Delegated(key, namespace) {
		return nil, fmt.Errorf("CA Secret %q: %w", key.String(), errNotDelegated)
	}
	s := r.secret(key)
	if s == nil {
		return nil, fmt.Errorf("CA Secret %q not found", key.String())
	}
	ca := secretData(s, CAKey)
	if !ValidPEMCerts(ca) {
		return nil, fmt.Errorf("CA Secret %q has no valid PEM certificate under key %q", key.String(), CAKey)
	}
	return &ir.Secret{Name: key.Namespace + "/" + key.Name + "/" + CAKey, CA: ca}, nil
}

// secretData reads a key from data, or from stringData for Secrets read
// from files (the API server folds stringData into data).
func secretData(s *corev1.Secret, key string) []byte {
	if v, ok := s.Data[key]; ok {
		return v
	}
	if v, ok := s.StringData[key]; ok {
		return []byte(v)
	}
	return nil
}

// ValidPEMCerts reports whether b holds PEM certificates, at least one,
// each of which parses.
func ValidPEMCerts(b []byte) bool {
	found := false
	for {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			return found
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return false
		}
		found = true
	}
}

// buildDelegations validates TLSCertificateDelegations.
func (b Stage) buildDelegations() {
	for _, d := range b.R.Snap.delegations {
		st := b.specStatus(KindTLSCertificateDelegation, d, &d.Spec)
		if len(d.Spec.Delegations) == 0 {
			st.AddError(contourv1.ConditionTypeDelegationError, status.ReasonNoDelegations, "spec.delegations must list at least one Secret")
		}
		for i, cd := range d.Spec.Delegations {
			if cd.SecretName == "" {
				st.AddError(contourv1.ConditionTypeDelegationError, status.ReasonSecretNameRequired, fmt.Sprintf("spec.delegations[%d].secretName is required", i))
				continue
			}
			if len(cd.TargetNamespaces) == 0 {
				st.AddError(contourv1.ConditionTypeDelegationError, status.ReasonTargetNamespacesRequired, fmt.Sprintf("spec.delegations[%d].targetNamespaces must list namespaces or \"*\"", i))
			}
			for j, ns := range cd.TargetNamespaces {
				if ns == "*" {
					continue
				}
				if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
					st.AddError(contourv1.ConditionTypeDelegationError, status.ReasonTargetNamespaceInvalid, fmt.Sprintf("spec.delegations[%d].targetNamespaces[%d] %q is not a namespace name or \"*\": %s", i, j, ns, strings.Join(errs, "; ")))
				}
			}
			if b.R.secret(NsName(d.Namespace, cd.SecretName)) == nil {
				st.AddWarning(contourv1.ConditionTypeDelegationError, status.ReasonSecretNotFound, fmt.Sprintf("spec.delegations[%d]: Secret %q not found in namespace %q", i, cd.SecretName, d.Namespace))
			}
		}
	}
}
