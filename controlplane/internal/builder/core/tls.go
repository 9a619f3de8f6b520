package core

import (
	"errors"
	"fmt"

	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// IsNotDelegated reports whether err is a Secret of another namespace
// that is not delegated to the one referring to it.
func IsNotDelegated(err error) bool { return errors.Is(err, errNotDelegated) }

// CertificateProblem says why the certificate Secret ref cannot be used:
// SecretNotValid (missing or invalid, as Contour says both) or
// DelegationNotPermitted.
func CertificateProblem(ref string, err error) (reason, message string) {
	switch {
	case errors.Is(err, errSecretNotFound):
		return status.ReasonSecretNotValid, fmt.Sprintf("Spec.VirtualHost.TLS Secret %q is invalid: Secret not found", ref)
	case errors.Is(err, errNotDelegated):
		return status.ReasonDelegationNotPermitted, fmt.Sprintf("Spec.VirtualHost.TLS Secret %q certificate delegation not permitted", ref)
	}
	return status.ReasonSecretNotValid, fmt.Sprintf("Spec.VirtualHost.TLS Secret %q is invalid: %v", ref, err)
}
