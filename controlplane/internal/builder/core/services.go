package core

import (
	"errors"
	"fmt"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// ServiceProtocol is the upstream protocol a route's service names
// (HTTP/1.1 when it names none).
func ServiceProtocol(p *string) (ir.Protocol, error) {
	if p == nil {
		return ir.HTTP1, nil
	}
	switch *p {
	case "h2":
		return ir.H2, nil
	case "h2c":
		return ir.H2C, nil
	case "tls":
		return ir.TLS, nil
	}
	return "", fmt.Errorf("protocol %q is unsupported: use h2, h2c or tls", *p)
}

// ServiceValidation resolves a route service's upstream validation (nil
// for none), which needs TLS to the service.
func (b Stage) ServiceValidation(v *contourv1.UpstreamValidation, protocol ir.Protocol, namespace string) (*ir.UpstreamValidation, error) {
	if v == nil {
		return nil, nil
	}
	if protocol != ir.TLS && protocol != ir.H2 {
		return nil, errors.New("validation requires protocol tls or h2")
	}
	return b.UpstreamValidation(v, namespace)
}
