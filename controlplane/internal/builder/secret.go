package builder

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
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

// tlsSecret resolves a server certificate Secret ("name" or
// "namespace/name") for an object in namespace, checking delegation.
func (b *builder) tlsSecret(ref, namespace string) (string, error) {
	key := splitRef(ref, namespace)
	if key.Namespace != namespace && !b.delegated(key, namespace) {
		return "", errNotDelegated
	}
	// Thousands of hosts often share one certificate: parse it once. The
	// lookup is still a root's input (parsedTLS is for one build).
	s := b.lookupSecret(key)
	r, ok := b.parsedTLS[key]
	if !ok {
		r.name, r.err = b.parseTLSSecret(key, s)
		if b.parsedTLS == nil {
			b.parsedTLS = map[types.NamespacedName]parsedSecret{}
		}
		b.parsedTLS[key] = r
	}
	if r.err == nil {
		b.usedSecret(r.name)
	}
	return r.name, r.err
}

// parsedSecret is the outcome of checking one TLS Secret.
type parsedSecret struct {
	name string
	err  error
}

func (b *builder) parseTLSSecret(key types.NamespacedName, s *corev1.Secret) (string, error) {
	if s == nil {
		return "", errSecretNotFound
	}
	cert, keyPEM := secretData(s, corev1.TLSCertKey), secretData(s, corev1.TLSPrivateKeyKey)
	if len(cert) == 0 || len(keyPEM) == 0 {
		return "", fmt.Errorf("%w: it needs the keys %s and %s", errSecretMalformed, corev1.TLSCertKey, corev1.TLSPrivateKeyKey)
	}
	if _, err := tls.X509KeyPair(cert, keyPEM); err != nil {
		return "", fmt.Errorf("%w: %v", errSecretMalformed, err)
	}
	name := key.Namespace + "/" + key.Name
	b.secretsO[name] = &ir.Secret{Name: name, Cert: cert, Key: keyPEM}
	return name, nil
}

// caSecret resolves a CA bundle Secret into an SDS validation secret.
func (b *builder) caSecret(ref, namespace string) (string, error) {
	if ref == "" {
		return "", errors.New("caSecret is required")
	}
	key := splitRef(ref, namespace)
	if key.Namespace != namespace && !b.delegated(key, namespace) {
		return "", fmt.Errorf("CA Secret %q: %w", key.String(), errNotDelegated)
	}
	s := b.lookupSecret(key)
	if s == nil {
		return "", fmt.Errorf("CA Secret %q not found", key.String())
	}
	ca := secretData(s, CAKey)
	if !validPEMCerts(ca) {
		return "", fmt.Errorf("CA Secret %q has no valid PEM certificate under key %q", key.String(), CAKey)
	}
	name := key.Namespace + "/" + key.Name + "/" + CAKey
	b.secretsO[name] = &ir.Secret{Name: name, CA: ca}
	b.usedSecret(name)
	return name, nil
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

func validPEMCerts(b []byte) bool {
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

// delegated reports whether a TLSCertificateDelegation in the Secret's
// namespace lets namespace use it.
func (b *builder) delegated(secret types.NamespacedName, namespace string) bool {
	for _, d := range b.delegations {
		if d.Namespace != secret.Namespace {
			continue
		}
		for _, cd := range d.Spec.Delegations {
			if cd.SecretName == secret.Name && (slices.Contains(cd.TargetNamespaces, namespace) || slices.Contains(cd.TargetNamespaces, "*")) {
				return true
			}
		}
	}
	return false
}

// buildDelegations validates TLSCertificateDelegations.
func (b *builder) buildDelegations() {
	for _, d := range b.delegations {
		st := b.specStatus(KindTLSCertificateDelegation, d, d.Spec)
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
			if _, ok := b.secrets[nn(d.Namespace, cd.SecretName)]; !ok {
				st.AddWarning(contourv1.ConditionTypeDelegationError, status.ReasonSecretNotFound, fmt.Sprintf("spec.delegations[%d]: Secret %q not found in namespace %q", i, cd.SecretName, d.Namespace))
			}
		}
	}
}
