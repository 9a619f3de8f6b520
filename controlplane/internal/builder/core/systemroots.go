package core

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// SystemCASecretName is the SDS validation secret that holds the system's
// trust roots (Options.SystemCA). One secret, shared by every cluster that
// verifies against them, so that Envoy receives the bundle (some 200 KB)
// once rather than once per cluster. Secrets of objects are named
// namespace/name/key, so the name cannot collide with one.
const SystemCASecretName = "system-ca"

// ErrNoSystemCA says that an https URI without a CA cannot be verified:
// the control plane has no system trust roots (--system-ca-file).
var ErrNoSystemCA = errors.New("this control plane has no system trust roots (--system-ca-file): add a validation (caSecret and subjectName)")

// SystemRootsValidation verifies the server of an https URI without a CA
// of its own against the system's trust roots: its certificate must chain
// to one of them and present host (the URI's host name) as a DNS SAN,
// which is also the SNI. It records the use of the roots' secret. A host
// that is an IP address is refused: public CAs seldom certify one, and the
// SAN matched is a DNS name.
func (b Stage) SystemRootsValidation(host string) (*ir.UpstreamValidation, error) {
	ca := b.R.Opts().SystemCA
	if len(ca) == 0 {
		return nil, ErrNoSystemCA
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return nil, fmt.Errorf("its host is the IP address %s, and the system's trust roots verify host names only: add a validation (caSecret and subjectName)", host)
	}
	b.Out.UseSecret(&ir.Secret{Name: SystemCASecretName, CA: ca})
	return &ir.UpstreamValidation{CASecret: SystemCASecretName, SubjectName: host}, nil
}
