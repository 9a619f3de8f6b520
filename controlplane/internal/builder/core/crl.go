package core

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// CRLKey is the key of the PEM revocation lists in a crlSecret, as in
// Contour.
const CRLKey = "crl.pem"

// ClientCRL resolves clientValidation.crlSecret into the SDS validation
// secret of the host, for the caller to use: the CA bundle ca (the
// resolved caSecret, nil when verification is skipped) with the
// revocation lists (and crlOnlyVerifyLeafCert), so that a new CRL reaches
// Envoy over SDS without a listener change. Nil without crlSecret.
func (b Stage) ClientCRL(cv *contourv1.DownstreamValidation, ca *ir.Secret, namespace string) (*ir.Secret, error) {
	if cv.CertificateRevocationList == "" {
		if cv.OnlyVerifyLeafCertCrl {
			return nil, errors.New("crlOnlyVerifyLeafCert needs a crlSecret")
		}
		return nil, nil
	}
	if cv.SkipClientCertValidation {
		return nil, errors.New("crlSecret and skipClientCertValidation are mutually exclusive: revocation is checked on verified certificates")
	}
	key := SplitRef(cv.CertificateRevocationList, namespace)
	if key.Namespace != namespace && !b.R.Delegated(key, namespace) {
		return nil, fmt.Errorf("CRL Secret %q: %w", key.String(), errNotDelegated)
	}
	s := b.R.secret(key)
	if s == nil {
		return nil, fmt.Errorf("CRL Secret %q not found", key.String())
	}
	crl := secretData(s, CRLKey)
	if err := validPEMCRLs(crl); err != nil {
		return nil, fmt.Errorf("CRL Secret %q key %q: %v", key.String(), CRLKey, err)
	}
	out := &ir.Secret{
		Name: ca.Name + "/crl/" + key.Namespace + "/" + key.Name,
		CA:   ca.CA, CRL: crl, OnlyVerifyLeafCRL: cv.OnlyVerifyLeafCertCrl,
	}
	if out.OnlyVerifyLeafCRL {
		out.Name += "/leaf"
	}
	return out, nil
}

// validPEMCRLs checks that b holds at least one PEM X509 CRL and nothing
// else that Envoy would choke on.
func validPEMCRLs(b []byte) error {
	n := 0
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			break
		}
		if blk.Type != "X509 CRL" {
			return fmt.Errorf("a PEM block of type %q, want X509 CRL", blk.Type)
		}
		if _, err := x509.ParseRevocationList(blk.Bytes); err != nil {
			return fmt.Errorf("CRL %d: %v", n, err)
		}
		n++
	}
	if n == 0 {
		return errors.New("no PEM X509 CRL")
	}
	return nil
}
