// Package xdstls is the xDS server's mutual TLS: a serving certificate and
// a CA that every client (Envoy) certificate must chain to, read from
// files and read again when they change, so that rotating them (cert-manager,
// a Secret update: Kubernetes swaps a Secret volume's files atomically
// through a symbolic link) takes no restart. Connections keep the
// certificates of their handshake; new ones get the new certificates.
package xdstls

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"syscall"
	"time"
)

// Files are the paths of the server's certificate (PEM, the chain),
// private key (PEM) and client CA bundle (PEM, one or more CAs: during a CA
// rotation, the old and the new).
type Files struct {
	Cert, Key, ClientCA string
}

// Set reports whether any file is given.
func (f Files) Set() bool { return f.Cert != "" || f.Key != "" || f.ClientCA != "" }

// Validate fails unless all three are given: a serving certificate
// without client verification would let anyone read the configuration
// (Secrets included), so there is no server-only TLS.
func (f Files) Validate() error {
	if f.Cert == "" || f.Key == "" || f.ClientCA == "" {
		return errors.New("xDS over mTLS needs all of --xds-tls-cert, --xds-tls-key and --xds-tls-client-ca")
	}
	return nil
}

// Reloader holds the TLS configuration of the files as last read.
type Reloader struct {
	files Files
	log   *slog.Logger

	mu      sync.Mutex
	stamp   [3]fileStamp
	config  *tls.Config
	leaf    *x509.Certificate
	lastErr string
}

// fileStamp tells whether a file changed: what it resolves to (a symbolic
// link swapped to a new target is a new inode) and its size and time.
type fileStamp struct {
	ino     uint64
	size    int64
	modTime time.Time
}

// New reads the files; an error when they are not a valid key pair and CA
// bundle (the server must not start without them).
func New(files Files, log *slog.Logger) (*Reloader, error) {
	if err := files.Validate(); err != nil {
		return nil, err
	}
	r := &Reloader{files: files, log: log}
	stamp, err := r.stamps()
	if err != nil {
		return nil, err
	}
	cfg, leaf, err := load(files)
	if err != nil {
		return nil, err
	}
	r.stamp, r.config, r.leaf = stamp, cfg, leaf
	return r, nil
}

// ServerConfig is the tls.Config of the listener: each handshake takes
// the files' current certificates, read again if they changed.
func (r *Reloader) ServerConfig() *tls.Config {
	return &tls.Config{
		MinVersion:         tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) { return r.current(), nil },
	}
}

// NotAfter is when the serving certificate in use expires.
func (r *Reloader) NotAfter() time.Time {
	r.current()
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.leaf.NotAfter
}

// current returns the configuration of the files, reading them again when
// they changed. A change that does not load (a key that does not match its
// certificate, half-written files) keeps the previous configuration and is
// logged; it is tried again at the next handshake.
func (r *Reloader) current() *tls.Config {
	r.mu.Lock()
	defer r.mu.Unlock()
	stamp, err := r.stamps()
	if err == nil && stamp == r.stamp {
		return r.config
	}
	var cfg *tls.Config
	var leaf *x509.Certificate
	if err == nil {
		cfg, leaf, err = load(r.files)
	}
	if err != nil {
		if msg := err.Error(); msg != r.lastErr {
			r.lastErr = msg
			r.log.Error("xDS TLS: the changed certificate files do not load: keeping the previous ones", "err", err)
		}
		return r.config
	}
	r.stamp, r.config, r.leaf, r.lastErr = stamp, cfg, leaf, ""
	r.log.Info("xDS TLS: certificate files reloaded", "subject", leaf.Subject.String(), "serial", leaf.SerialNumber.Text(16), "notAfter", leaf.NotAfter)
	return cfg
}

func (r *Reloader) stamps() ([3]fileStamp, error) {
	var out [3]fileStamp
	for i, p := range []string{r.files.Cert, r.files.Key, r.files.ClientCA} {
		fi, err := os.Stat(p)
		if err != nil {
			return out, err
		}
		out[i] = fileStamp{size: fi.Size(), modTime: fi.ModTime()}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			out[i].ino = st.Ino
		}
	}
	return out, nil
}

// load reads the key pair and the client CA bundle.
func load(f Files) (*tls.Config, *x509.Certificate, error) {
	cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		return nil, nil, fmt.Errorf("xDS TLS key pair %s, %s: %w", f.Cert, f.Key, err)
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return nil, nil, fmt.Errorf("xDS TLS certificate %s: %w", f.Cert, err)
	}
	pem, err := os.ReadFile(f.ClientCA)
	if err != nil {
		return nil, nil, fmt.Errorf("xDS TLS client CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, nil, fmt.Errorf("xDS TLS client CA %s: no PEM certificate", f.ClientCA)
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientCAs:    pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		MinVersion:   tls.VersionTLS12,
		// Envoy's gRPC client speaks HTTP/2 over TLS.
		NextProtos: []string{"h2"},
	}, leaf, nil
}
