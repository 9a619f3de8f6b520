package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/portcullis/portcullis/e2e/harness"
)

// xdsPeer is one side of the xDS connection: a SecretDir holding tls.crt,
// tls.key and ca.crt, as a Secret volume.
type xdsPeer struct {
	dir  *harness.SecretDir
	cert *harness.KeyPair
}

func newXDSPeer(t *testing.T, cert *harness.KeyPair, caBundle []byte) *xdsPeer {
	p := &xdsPeer{dir: harness.NewSecretDir(t)}
	p.write(cert, caBundle)
	return p
}

func (p *xdsPeer) write(cert *harness.KeyPair, caBundle []byte) {
	p.cert = cert
	p.dir.Write(map[string][]byte{"tls.crt": cert.CertPEM, "tls.key": cert.KeyPEM, "ca.crt": caBundle})
}

// TestXDSMutualTLS: Envoy gets its configuration over mTLS with its
// certificates through SDS from files; clients without a certificate, or
// with one of another CA, are refused. Both sides' certificates and CAs are
// then rotated (files swapped atomically, as Kubernetes does) under steady
// load: no request fails, new connections to the control plane get its new
// certificate, Envoy loads its new ones without a restart, and once the old
// CA is gone from both bundles Envoy reconnects with its new certificate
// (and the old one is refused).
func TestXDSMutualTLS(t *testing.T) {
	oldCA, newCA, otherCA := harness.NewCA(t, "xds-old"), harness.NewCA(t, "xds-new"), harness.NewCA(t, "xds-other")
	server := newXDSPeer(t, oldCA.Issue(t, "127.0.0.1"), oldCA.CertPEM)
	client := newXDSPeer(t, oldCA.Issue(t, "envoy"), oldCA.CertPEM)

	echo := harness.StartEcho(t, "echo")
	objects := harness.Dir(t.TempDir())
	if err := objects.Apply(context.Background(), append(harness.LoopbackEndpointSlice("default", "echo", 80, echo.Port), leaderProxy("first"))...); err != nil {
		t.Fatal(err)
	}
	httpAddr := harness.FreeAddr(t)
	cp := harness.StartControlPlane(t, "portcullis", httpAddr, harness.FreeAddr(t), "--provider", "file", "-f", string(objects),
		"--xds-tls-cert", server.dir.Path("tls.crt"), "--xds-tls-key", server.dir.Path("tls.key"), "--xds-tls-client-ca", server.dir.Path("ca.crt"))
	envoy := harness.StartEnvoyOn(t, cp.XDSAddr, "--node-id", "envoy-mtls",
		"--xds-tls-cert", client.dir.Path("tls.crt"), "--xds-tls-key", client.dir.Path("tls.key"), "--xds-tls-ca", client.dir.Path("ca.crt"))
	harness.EventuallyEcho(t, harness.HTTPClient(httpAddr), harness.MustRequest(t, "http://first.example.com/"), http.StatusOK)
	if got := clientSerials(t, cp); len(got) != 1 || got[0] != serialOf(t, client.cert) {
		t.Fatalf("Envoy's stream presented %v, want its certificate %s", got, serialOf(t, client.cert))
	}

	// Refused: plaintext, no certificate, another CA's certificate.
	other := otherCA.Issue(t, "intruder")
	for name, cert := range map[string]*harness.KeyPair{"no certificate": nil, "another CA's certificate": other} {
		if _, err := xdsHandshake(cp.XDSAddr, oldCA.CertPEM, cert); err == nil {
			t.Errorf("a client with %s was accepted", name)
		}
	}
	if err := plaintextADS(cp.XDSAddr); err == nil {
		t.Error("a plaintext client was answered")
	}

	load := harness.StartSteadyLoad(2, 30*time.Second, echoRequests(httpAddr, "first.example.com"))
	time.Sleep(time.Second)

	// 1. Both sides trust both CAs.
	bundle := append(append([]byte{}, oldCA.CertPEM...), newCA.CertPEM...)
	server.write(server.cert, bundle)
	client.write(client.cert, bundle)
	time.Sleep(2 * time.Second) // Envoy reloads its CA bundle
	// 2. Both sides get certificates of the new CA.
	server.write(newCA.Issue(t, "127.0.0.1"), bundle)
	client.write(newCA.Issue(t, "envoy"), bundle)
	harness.Eventually(t, 10*time.Second, func() error {
		got, err := xdsHandshake(cp.XDSAddr, newCA.CertPEM, client.cert)
		if err != nil {
			return err
		}
		if want := serialOf(t, server.cert); got != want {
			return fmt.Errorf("a new connection got the server certificate %s, want the rotated %s", got, want)
		}
		return nil
	})
	harness.Eventually(t, 10*time.Second, func() error {
		return envoyHasCertificate(envoy, serialOf(t, client.cert))
	})
	// 3. The old CA leaves both bundles.
	server.write(server.cert, newCA.CertPEM)
	client.write(client.cert, newCA.CertPEM)
	time.Sleep(2 * time.Second)
	if _, err := xdsHandshake(cp.XDSAddr, newCA.CertPEM, oldCA.Issue(t, "envoy")); err == nil {
		t.Error("a client certificate of the removed CA was accepted")
	}
	// A new connection from Envoy (the control plane restarts; the
	// rotations above took none): only its new certificate, and its new CA
	// bundle, can make it.
	cp.Restart()
	second := leaderProxy("second")
	if err := objects.Apply(context.Background(), second); err != nil {
		t.Fatal(err)
	}
	harness.EventuallyEcho(t, harness.HTTPClient(httpAddr), harness.MustRequest(t, "http://second.example.com/"), http.StatusOK)
	if got := clientSerials(t, cp); len(got) != 1 || got[0] != serialOf(t, client.cert) {
		t.Errorf("Envoy reconnected with %v, want its rotated certificate %s", got, serialOf(t, client.cert))
	}

	r := load.Wait()
	t.Logf("xDS certificates rotated on both sides, control plane restarted: %s", r)
	if r.Requests == 0 || r.Errors != 0 {
		t.Errorf("load during the rotation: %s; want requests and none failed", r)
	}
}

// serialOf is a certificate's serial number, in hexadecimal.
func serialOf(t *testing.T, kp *harness.KeyPair) string {
	t.Helper()
	b, _ := pem.Decode(kp.CertPEM)
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c.SerialNumber.Text(16)
}

// xdsHandshake connects to the xDS server over TLS (with a client
// certificate when cert is set) trusting caPEM, and returns the serial of
// the server's certificate; an error when either side refused.
func xdsHandshake(addr string, caPEM []byte, cert *harness.KeyPair) (string, error) {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	cfg := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", NextProtos: []string{"h2"}}
	if cert != nil {
		c, err := tls.X509KeyPair(cert.CertPEM, cert.KeyPEM)
		if err != nil {
			return "", err
		}
		cfg.Certificates = []tls.Certificate{c}
	}
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	// The HTTP/2 preface: a server that accepted the client answers with
	// its SETTINGS; one that refused it (TLS 1.3 tells after the
	// handshake) closes with an alert.
	if err := conn.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return "", err
	}
	if _, err := conn.Write([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")); err != nil {
		return "", err
	}
	if _, err := conn.Read(make([]byte, 9)); err != nil {
		return "", err
	}
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.Text(16), nil
}

// plaintextADS sends the HTTP/2 preface without TLS: a nil error means the
// server answered in plaintext.
func plaintextADS(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return err
	}
	if _, err := conn.Write([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")); err != nil {
		return err
	}
	b := make([]byte, 9)
	if _, err := conn.Read(b); err != nil {
		return err
	}
	if b[3] != 0x4 { // an HTTP/2 SETTINGS frame
		return fmt.Errorf("not HTTP/2: % x", b)
	}
	return nil
}

// clientSerials are the serials of the client certificates of the control
// plane's open xDS streams.
func clientSerials(t *testing.T, cp *harness.ControlPlane) []string {
	t.Helper()
	var out []string
	harness.Eventually(t, 30*time.Second, func() error {
		resp, err := http.Get("http://" + cp.AdminAddr + "/status")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var body struct {
			Envoy struct {
				ClientCertificates []struct{ Serial string }
			}
		}
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			return err
		}
		out = nil
		for _, c := range body.Envoy.ClientCertificates {
			out = append(out, c.Serial)
		}
		if len(out) == 0 {
			return fmt.Errorf("no xDS stream yet")
		}
		return nil
	})
	return out
}

// envoyHasCertificate checks Envoy's /certs for a certificate of serial.
func envoyHasCertificate(envoy *harness.Envoy, serial string) error {
	body, err := envoy.Admin("/certs")
	if err != nil {
		return err
	}
	var certs struct {
		Certificates []struct {
			CertChain []struct {
				SerialNumber string `json:"serial_number"`
			} `json:"cert_chain"`
		}
	}
	if err := json.Unmarshal(body, &certs); err != nil {
		return err
	}
	var seen []string
	for _, c := range certs.Certificates {
		for _, cc := range c.CertChain {
			if strings.TrimLeft(strings.ToLower(cc.SerialNumber), "0") == strings.TrimLeft(serial, "0") {
				return nil
			}
			seen = append(seen, cc.SerialNumber)
		}
	}
	return fmt.Errorf("Envoy's certificates are %v, want %s", seen, serial)
}
