package xdstls

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/portcullis/portcullis/serverkit/certs"
)

// secretDir is a folder laid out as a Secret volume (certs.WriteSecretDir).
type secretDir struct {
	t   *testing.T
	dir string
}

func (d *secretDir) write(files map[string][]byte) {
	d.t.Helper()
	if err := certs.WriteSecretDir(d.dir, files); err != nil {
		d.t.Fatal(err)
	}
}

func (d *secretDir) files() Files {
	return Files{Cert: filepath.Join(d.dir, "tls.crt"), Key: filepath.Join(d.dir, "tls.key"), ClientCA: filepath.Join(d.dir, "ca.crt")}
}

func newCA(t *testing.T, name string) *certs.CA {
	t.Helper()
	ca, err := certs.NewCA(name)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func issue(t *testing.T, ca *certs.CA, client bool) (certPEM, keyPEM []byte) {
	t.Helper()
	c, k, err := ca.Issue("portcullis-xds", []string{"127.0.0.1"}, client)
	if err != nil {
		t.Fatal(err)
	}
	return c, k
}

func pair(t *testing.T, certPEM, keyPEM []byte) tls.Certificate {
	t.Helper()
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// serve accepts TLS connections with r's configuration and completes their
// handshakes.
func serve(t *testing.T, r *Reloader) string {
	t.Helper()
	lis, err := tls.Listen("tcp", "127.0.0.1:0", r.ServerConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lis.Close() })
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if c.(*tls.Conn).Handshake() == nil {
					// Holds the connection open until the client closes
					// it; how it ends does not matter.
					_, _ = io.Copy(io.Discard, c)
				}
			}()
		}
	}()
	return lis.Addr().String()
}

// dial handshakes as a client trusting roots, with cert when not nil, and
// returns the server's certificate; an error when either side refused.
func dial(addr string, roots *x509.CertPool, cert *tls.Certificate) (*x509.Certificate, error) {
	cfg := &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", NextProtos: []string{"h2"}}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	c, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	// TLS 1.3: the server's verdict on the client certificate comes with
	// the first read.
	if err := c.SetReadDeadline(timeNowPlus()); err != nil {
		return nil, err
	}
	if _, err := c.Read(make([]byte, 1)); err != nil && !isTimeout(err) {
		return nil, err
	}
	return c.ConnectionState().PeerCertificates[0], nil
}

func TestFilesAllOrNone(t *testing.T) {
	for _, f := range []Files{{Cert: "a"}, {Cert: "a", Key: "b"}, {Key: "b", ClientCA: "c"}} {
		if _, err := New(f, slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), "--xds-tls-client-ca") {
			t.Errorf("New(%+v) = %v, want an error naming the three flags", f, err)
		}
	}
}

// Clients need a certificate of the client CA; rotating the files (an
// atomic swap, as Kubernetes does) changes what new handshakes get, with
// no restart; a rotation that does not load keeps the last good files.
func TestMutualTLSAndRotation(t *testing.T) {
	oldCA, newCA, otherCA := newCA(t, "old"), newCA(t, "new"), newCA(t, "other")
	dir := &secretDir{t: t, dir: t.TempDir()}
	srvCert, srvKey := issue(t, oldCA, false)
	dir.write(map[string][]byte{"tls.crt": srvCert, "tls.key": srvKey, "ca.crt": oldCA.CertPEM()})
	r, err := New(dir.files(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, r)

	oldClient := clientPair(t, oldCA)
	otherClient := clientPair(t, otherCA)
	if _, err := dial(addr, oldCA.Pool(), &oldClient); err != nil {
		t.Fatalf("a client of the client CA was refused: %v", err)
	}
	if _, err := dial(addr, oldCA.Pool(), nil); err == nil {
		t.Error("a client without a certificate was accepted")
	}
	if _, err := dial(addr, oldCA.Pool(), &otherClient); err == nil {
		t.Error("a client of another CA was accepted")
	}

	// Rotation: a server certificate of the new CA, both CAs trusted.
	newCert, newKey := issue(t, newCA, false)
	bundle := append(oldCA.CertPEM(), newCA.CertPEM()...)
	dir.write(map[string][]byte{"tls.crt": newCert, "tls.key": newKey, "ca.crt": bundle})
	got, err := dial(addr, newCA.Pool(), &oldClient)
	if err != nil {
		t.Fatalf("after the rotation: %v", err)
	}
	if want := pair(t, newCert, newKey); string(got.Raw) != string(want.Certificate[0]) {
		t.Errorf("a new connection got the certificate %s, want the rotated one", got.SerialNumber.Text(16))
	}
	newClient := clientPair(t, newCA)
	if _, err := dial(addr, newCA.Pool(), &newClient); err != nil {
		t.Errorf("a client of the new CA, in the bundle, was refused: %v", err)
	}

	// A broken rotation (the key of another certificate) keeps the last
	// good files.
	_, strayKey := issue(t, newCA, false)
	dir.write(map[string][]byte{"tls.crt": newCert, "tls.key": strayKey, "ca.crt": newCA.CertPEM()})
	if _, err := dial(addr, newCA.Pool(), &oldClient); err != nil {
		t.Errorf("a broken rotation took effect: the old CA's client, trusted before it, was refused: %v", err)
	}
	// Fixed: the old CA is no longer trusted.
	dir.write(map[string][]byte{"tls.crt": newCert, "tls.key": newKey, "ca.crt": newCA.CertPEM()})
	if _, err := dial(addr, newCA.Pool(), &oldClient); err == nil {
		t.Error("a client of the CA removed from the bundle was accepted")
	}
	if _, err := dial(addr, newCA.Pool(), &newClient); err != nil {
		t.Errorf("a client of the new CA was refused: %v", err)
	}
}

func clientPair(t *testing.T, ca *certs.CA) tls.Certificate {
	c, k := issue(t, ca, true)
	return pair(t, c, k)
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

func timeNowPlus() time.Time { return time.Now().Add(200 * time.Millisecond) }
