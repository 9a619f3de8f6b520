package serverkit

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
)

// serverTLSConfig returns nil when TLS is not configured.
func serverTLSConfig(o *Options) (*tls.Config, error) {
	if o.TLSCertPath == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(o.TLSCertPath, o.TLSKeyPath)
	if err != nil {
		return nil, fmt.Errorf("loading TLS key pair: %w", err)
	}
	cfg := &tls.Config{
		Certificates: []tls.Certificate{cert},
		// Envoy's upstream TLS defaults to a maximum of TLS 1.2, so 1.3-only
		// would break the default ExtensionService setup.
		MinVersion: tls.VersionTLS12,
	}
	if o.TLSCAPath != "" {
		pem, err := os.ReadFile(o.TLSCAPath)
		if err != nil {
			return nil, fmt.Errorf("reading client CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("client CA %s: no PEM certificates found", o.TLSCAPath)
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}
