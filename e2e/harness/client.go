package harness

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"time"
)

// HTTPClient returns a client that sends every request to resolveTo
// (host:port, e.g. Envoy's HTTP listener) whatever the URL's host, so
// "http://echo.example.com/" reaches Envoy with Host echo.example.com.
//
// Like every client here it does not follow redirects (tests inspect them)
// and does not reuse connections (each request sees Envoy's current
// listeners and filter chains).
func HTTPClient(resolveTo string) *http.Client {
	return newClient(resolveTo, nil)
}

// HTTPSClient is HTTPClient for TLS: the handshake uses the URL's host as
// SNI and verifies the server's certificate against caPEM (and only it).
// Tweak Transport.(*http.Transport).TLSClientConfig for client
// certificates.
func HTTPSClient(caPEM []byte, resolveTo string) *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	return newClient(resolveTo, &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})
}

func newClient(resolveTo string, tlsConfig *tls.Config) *http.Client {
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	return &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return dialer.DialContext(ctx, network, resolveTo)
			},
			TLSClientConfig:   tlsConfig,
			DisableKeepAlives: true,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
