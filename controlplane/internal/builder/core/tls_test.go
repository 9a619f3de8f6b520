package core

import (
	"errors"
	"fmt"
	"testing"

	"github.com/portcullis/portcullis/controlplane/internal/status"
)

func TestCertificateProblem(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{errSecretNotFound, status.ReasonSecretNotValid},
		{errNotDelegated, status.ReasonDelegationNotPermitted},
		{fmt.Errorf("%w: no key", errSecretMalformed), status.ReasonSecretNotValid},
		{errors.New("anything else"), status.ReasonSecretNotValid},
	} {
		if got, msg := CertificateProblem("ns/cert", tc.err); got != tc.want || msg == "" {
			t.Errorf("certificateProblem(%v) = %q (%q), want %q", tc.err, got, msg, tc.want)
		}
	}
}
