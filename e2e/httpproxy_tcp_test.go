package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/e2e/harness"
)

// TestHTTPProxyTCPProxy: spec.tcpproxy through the file provider into the
// real Envoy's HTTPS listener. With tls.passthrough the client reaches a
// real TLS server by SNI and sees that server's own certificate (issued by
// a CA Envoy knows nothing of), which sees the SNI the client sent; with a
// secretName the client sees Envoy's certificate, no ALPN protocol, and a
// plain TCP server receives exactly the bytes the client wrote. The
// passthrough host's permitInsecure route is still served on the HTTP
// listener, a tcpproxy.include of another namespace's HTTPProxy reaches
// its service, TCP health checks keep connections off a dead endpoint
// (and, with a service's healthPort, check that port),
// a service with protocol tls and validation gets the decrypted stream
// encrypted again by Envoy (its certificate verified: a wrong CA or
// subject name fails the connection), and an ordinary TLS host on the
// same listener still terminates and routes HTTP.
func TestHTTPProxyTCPProxy(t *testing.T) {
	echo := harness.StartEcho(t, "echo")
	upstreamCA := harness.NewCA(t, "tcp-upstream-ca")
	envoyCA := harness.NewCA(t, "portcullis-e2e")
	tlsUpstream := startLineServer(t, "tls", upstreamCA.Issue(t, "passthrough.example.com", "included.example.com", "db.internal"))
	plainUpstream := startLineServer(t, "plain", nil)
	// The plain server's port on 127.0.0.2 too, answering as "second",
	// and a health port only 127.0.0.2 listens on.
	startLineServerAt(t, "second", fmt.Sprintf("127.0.0.2:%d", plainUpstream), nil)
	healthPort := startAcceptor(t, "127.0.0.2:0")

	dir := t.TempDir()
	httpAddr, httpsAddr, _ := harness.StartEnvoyAndControlPlane(t, "--provider", "file", "-f", dir)
	svc := []contourv1.Service{{Name: "echo", Port: 80}}
	var all []client.Object
	all = append(all, harness.LoopbackEndpointSlice("default", "echo", 80, echo.Port)...)
	all = append(all, harness.LoopbackEndpointSlice("default", "tls-upstream", 443, tlsUpstream)...)
	all = append(all, harness.LoopbackEndpointSlice("default", "plain-upstream", 80, plainUpstream)...)
	all = append(all, harness.LoopbackEndpointSlice("team", "tls-upstream", 443, tlsUpstream)...)
	// Two endpoints on the plain server's port: 127.0.0.1 listens,
	// 127.0.0.2 refuses every connection.
	halfDead := harness.LoopbackEndpointSlice("default", "half-dead", 80, plainUpstream)
	halfDead[1].(*discoveryv1.EndpointSlice).Endpoints[0].Addresses = []string{"127.0.0.1", "127.0.0.2"}
	all = append(all, halfDead...)
	// Both endpoints serve the plain server's port; only 127.0.0.2
	// passes the checks on the Service's health port.
	withHealthPort := harness.LoopbackEndpointSlice("default", "with-health-port", 80, plainUpstream)
	withHealthPort[0].(*corev1.Service).Spec.Ports = append(withHealthPort[0].(*corev1.Service).Spec.Ports, corev1.ServicePort{Name: "health", Port: 8081})
	hs := withHealthPort[1].(*discoveryv1.EndpointSlice)
	hs.Endpoints[0].Addresses = []string{"127.0.0.1", "127.0.0.2"}
	hs.Ports = append(hs.Ports, discoveryv1.EndpointPort{Name: ptrTo("health"), Port: ptrTo(int32(healthPort))})
	all = append(all, withHealthPort...)
	all = append(all,
		envoyCA.Issue(t, "terminated.example.com").Secret("default", "terminated-cert"),
		envoyCA.Issue(t, "https.example.com").Secret("default", "https-cert"),
		envoyCA.Issue(t, "checked.example.com", "health-port.example.com").Secret("default", "checked-cert"),
		envoyCA.Issue(t, "reencrypted.example.com", "wrong-ca.example.com", "wrong-name.example.com").Secret("default", "reencrypted-cert"),
		upstreamCA.Secret("default", "upstream-ca"),
		envoyCA.Secret("default", "envoy-ca"),
		&contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "passthrough"}, Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{Fqdn: "passthrough.example.com", TLS: &contourv1.TLS{Passthrough: true}},
			TCPProxy:    &contourv1.TCPProxy{Services: []contourv1.Service{{Name: "tls-upstream", Port: 443}}},
			Routes:      []contourv1.Route{{PermitInsecure: true, Services: svc}},
		}},
		&contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "terminated"}, Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{Fqdn: "terminated.example.com", TLS: &contourv1.TLS{SecretName: "terminated-cert"}},
			TCPProxy: &contourv1.TCPProxy{
				LoadBalancerPolicy: &contourv1.LoadBalancerPolicy{Strategy: "Random"},
				Services:           []contourv1.Service{{Name: "plain-upstream", Port: 80}},
			},
		}},
		&contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "included"}, Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{Fqdn: "included.example.com", TLS: &contourv1.TLS{Passthrough: true}},
			TCPProxy:    &contourv1.TCPProxy{Include: &contourv1.TCPProxyInclude{Namespace: "team", Name: "tls-backend"}},
		}},
		&contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "tls-backend"}, Spec: contourv1.HTTPProxySpec{
			TCPProxy: &contourv1.TCPProxy{Services: []contourv1.Service{{Name: "tls-upstream", Port: 443}}},
		}},
		&contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "checked"}, Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{Fqdn: "checked.example.com", TLS: &contourv1.TLS{SecretName: "checked-cert"}},
			TCPProxy: &contourv1.TCPProxy{
				HealthCheckPolicy: &contourv1.TCPHealthCheckPolicy{IntervalSeconds: 1, TimeoutSeconds: 1, UnhealthyThresholdCount: 1, HealthyThresholdCount: 1},
				Services:          []contourv1.Service{{Name: "half-dead", Port: 80}},
			},
		}},
		&contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "health-port"}, Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{Fqdn: "health-port.example.com", TLS: &contourv1.TLS{SecretName: "checked-cert"}},
			TCPProxy: &contourv1.TCPProxy{
				HealthCheckPolicy: &contourv1.TCPHealthCheckPolicy{IntervalSeconds: 1, TimeoutSeconds: 1, UnhealthyThresholdCount: 1, HealthyThresholdCount: 1},
				Services:          []contourv1.Service{{Name: "with-health-port", Port: 80, HealthPort: 8081}},
			},
		}},
		reencrypted("reencrypted", "upstream-ca", "db.internal"),
		reencrypted("wrong-ca", "envoy-ca", "db.internal"),
		reencrypted("wrong-name", "upstream-ca", "other.internal"),
		&contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "https"}, Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{Fqdn: "https.example.com", TLS: &contourv1.TLS{SecretName: "https-cert"}},
			Routes:      []contourv1.Route{{Services: svc}},
		}},
	)
	if err := harness.Dir(dir).Apply(context.Background(), all...); err != nil {
		t.Fatal(err)
	}

	t.Run("passthrough: the upstream's certificate and TLS", func(t *testing.T) {
		var got string
		var state tls.ConnectionState
		harness.Eventually(t, 30*time.Second, func() (err error) {
			got, state, err = tlsExchange(httpsAddr, "passthrough.example.com", upstreamCA.CertPEM, "hello through\n")
			return err
		})
		if cn := state.PeerCertificates[0].Issuer.CommonName; cn != "tcp-upstream-ca" {
			t.Errorf("certificate issued by %q, want the upstream's CA", cn)
		}
		if want := "tls sni=passthrough.example.com got=hello through"; got != want {
			t.Errorf("upstream answered %q, want %q", got, want)
		}
		// Envoy's CA does not verify it: Envoy did not terminate the TLS.
		if _, _, err := tlsExchange(httpsAddr, "passthrough.example.com", envoyCA.CertPEM, "x\n"); err == nil {
			t.Errorf("the passthrough host's certificate verified against Envoy's CA")
		}
	})

	t.Run("include: another namespace's tcpproxy", func(t *testing.T) {
		var got string
		harness.Eventually(t, 30*time.Second, func() (err error) {
			got, _, err = tlsExchange(httpsAddr, "included.example.com", upstreamCA.CertPEM, "hello included\n")
			return err
		})
		if want := "tls sni=included.example.com got=hello included"; got != want {
			t.Errorf("upstream answered %q, want %q", got, want)
		}
	})

	t.Run("terminated: Envoy's certificate, the plaintext stream upstream", func(t *testing.T) {
		var got string
		var state tls.ConnectionState
		harness.Eventually(t, 30*time.Second, func() (err error) {
			got, state, err = tlsExchange(httpsAddr, "terminated.example.com", envoyCA.CertPEM, "hello plain\n")
			return err
		})
		if cn := state.PeerCertificates[0].Subject.CommonName; cn != "terminated.example.com" {
			t.Errorf("certificate for %q, want Envoy's for terminated.example.com", cn)
		}
		if state.NegotiatedProtocol != "" {
			t.Errorf("ALPN negotiated %q, want none: the stream is not HTTP", state.NegotiatedProtocol)
		}
		if want := "plain sni= got=hello plain"; got != want {
			t.Errorf("upstream answered %q, want %q (the decrypted bytes)", got, want)
		}
	})

	t.Run("TCP health checks keep connections off a dead endpoint", func(t *testing.T) {
		// RoundRobin over the two endpoints: without the checks every
		// other connection would go to the one that refuses it.
		harness.Eventually(t, 30*time.Second, func() error {
			for i := range 20 {
				if _, _, err := tlsExchange(httpsAddr, "checked.example.com", envoyCA.CertPEM, fmt.Sprintf("n%d\n", i)); err != nil {
					return fmt.Errorf("connection %d: %w", i, err)
				}
			}
			return nil
		})
	})

	t.Run("healthPort: the TCP checks connect to the Service's health port", func(t *testing.T) {
		// Checked on the traffic port, both endpoints would pass and
		// RoundRobin would give 127.0.0.1 ("plain") every other
		// connection.
		harness.Eventually(t, 30*time.Second, func() error {
			for i := range 20 {
				got, _, err := tlsExchange(httpsAddr, "health-port.example.com", envoyCA.CertPEM, fmt.Sprintf("n%d\n", i))
				if err != nil {
					return fmt.Errorf("connection %d: %w", i, err)
				}
				if want := fmt.Sprintf("second sni= got=n%d", i); got != want {
					return fmt.Errorf("connection %d answered %q, want %q: only 127.0.0.2 passes the checks", i, got, want)
				}
			}
			return nil
		})
	})

	t.Run("protocol tls: Envoy encrypts again and validates the upstream", func(t *testing.T) {
		var got string
		var state tls.ConnectionState
		harness.Eventually(t, 30*time.Second, func() (err error) {
			got, state, err = tlsExchange(httpsAddr, "reencrypted.example.com", envoyCA.CertPEM, "hello reencrypted\n")
			return err
		})
		if cn := state.PeerCertificates[0].Issuer.CommonName; cn != "portcullis-e2e" {
			t.Errorf("certificate issued by %q, want Envoy's (the host terminates)", cn)
		}
		// The TLS server, reached with the subject name as SNI.
		if want := "tls sni=db.internal got=hello reencrypted"; got != want {
			t.Errorf("upstream answered %q, want %q", got, want)
		}
		// The same upstream, validated against the wrong CA or for a
		// name its certificate does not have: Envoy's handshake with it
		// fails and the client's connection is closed without an answer
		// (the hosts are on the listener: Envoy's certificate is served).
		for _, host := range []string{"wrong-ca.example.com", "wrong-name.example.com"} {
			for range 3 {
				_, _, err := tlsExchange(httpsAddr, host, envoyCA.CertPEM, "refused?\n")
				if err == nil {
					t.Fatalf("%s: the upstream answered: its certificate was accepted", host)
				}
				// Closed after the handshake, while writing or reading.
				if msg := err.Error(); !strings.HasPrefix(msg, "reading the answer") && !strings.HasPrefix(msg, "writing the line") {
					t.Errorf("%s: %v, want Envoy's handshake to succeed and the exchange to fail", host, err)
				}
			}
		}
	})

	t.Run("the passthrough host's permitInsecure route on the HTTP listener", func(t *testing.T) {
		harness.EventuallyEcho(t, harness.HTTPClient(httpAddr), harness.MustRequest(t, "http://passthrough.example.com/"), http.StatusOK)
	})

	t.Run("an ordinary TLS host still terminates and routes", func(t *testing.T) {
		harness.EventuallyEcho(t, harness.HTTPSClient(envoyCA.CertPEM, httpsAddr), harness.MustRequest(t, "https://https.example.com/"), http.StatusOK)
	})
}

// reencrypted is a root whose terminated TLS (reencrypted-cert) goes to
// tls-upstream with protocol tls, validated by the CA Secret caSecret for
// subjectName.
func reencrypted(name, caSecret, subjectName string) *contourv1.HTTPProxy {
	protocol := "tls"
	return &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Spec: contourv1.HTTPProxySpec{
		VirtualHost: &contourv1.VirtualHost{Fqdn: name + ".example.com", TLS: &contourv1.TLS{SecretName: "reencrypted-cert"}},
		TCPProxy: &contourv1.TCPProxy{Services: []contourv1.Service{{
			Name: "tls-upstream", Port: 443, Protocol: &protocol,
			UpstreamValidation: &contourv1.UpstreamValidation{CACertificate: caSecret, SubjectName: subjectName},
		}}},
	}}
}

// tlsExchange dials addr with TLS for serverName (offering h2 and
// http/1.1), verifying against caPEM, writes line and reads one line back.
func tlsExchange(addr, serverName string, caPEM []byte, line string) (string, tls.ConnectionState, error) {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	d := &net.Dialer{Timeout: 5 * time.Second}
	conn, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{ServerName: serverName, RootCAs: pool, NextProtos: []string{"h2", "http/1.1"}})
	if err != nil {
		return "", tls.ConnectionState{}, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Write([]byte(line)); err != nil {
		return "", tls.ConnectionState{}, fmt.Errorf("writing the line: %w", err)
	}
	got, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return "", tls.ConnectionState{}, fmt.Errorf("reading the answer: %w", err)
	}
	return strings.TrimSuffix(got, "\n"), conn.ConnectionState(), nil
}

// startLineServer serves, on a free loopback port, connections that send
// one line, answering "<name> sni=<SNI> got=<line>": over TLS with kp when
// set, plain TCP otherwise. It returns the port.
func startLineServer(t *testing.T, name string, kp *harness.KeyPair) int {
	t.Helper()
	return startLineServerAt(t, name, "127.0.0.1:0", kp)
}

// startLineServerAt is startLineServer on addr.
func startLineServerAt(t *testing.T, name, addr string, kp *harness.KeyPair) int {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	if kp != nil {
		cert, err := tls.X509KeyPair(kp.CertPEM, kp.KeyPEM)
		if err != nil {
			t.Fatal(err)
		}
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}})
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
				line, err := bufio.NewReader(conn).ReadString('\n')
				if err != nil {
					return
				}
				sni := ""
				if tc, ok := conn.(*tls.Conn); ok {
					sni = tc.ConnectionState().ServerName
				}
				fmt.Fprintf(conn, "%s sni=%s got=%s\n", name, sni, strings.TrimSuffix(line, "\n"))
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

// startAcceptor accepts and closes connections on addr (what a TCP health
// check needs); it returns the port.
func startAcceptor(t *testing.T, addr string) int {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			conn.Close()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

func ptrTo[T any](v T) *T { return &v }
