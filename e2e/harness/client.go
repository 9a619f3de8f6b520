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

// HTTPClientFrom is HTTPClient with its connections from the local
// address from (e.g. "127.0.0.2": on Linux every 127.0.0.0/8 address is
// the loopback's), so that Envoy sees a client of that address.
func HTTPClientFrom(resolveTo, from string) *http.Client {
	return withLocalAddress(newClient(resolveTo, nil), resolveTo, from)
}

// HTTPSClientFrom is HTTPSClient with its connections from the local
// address from, as HTTPClientFrom.
func HTTPSClientFrom(caPEM []byte, resolveTo, from string) *http.Client {
	return withLocalAddress(HTTPSClient(caPEM, resolveTo), resolveTo, from)
}

func withLocalAddress(c *http.Client, resolveTo, from string) *http.Client {
	dialer := &net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	c.Transport.(*http.Transport).DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
		return dialer.DialContext(ctx, network, resolveTo)
	}
	return c
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
