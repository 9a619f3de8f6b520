// Package extension calls the extension server's hooks
// (docs/design/extension-server-hooks.md) on the translator's output:
// Runner.Apply takes the Resources of one translation and returns them as
// the extension changed them, with the failures of the hooks, validated,
// under the registration's failure policy.
package extension

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
)

// Hook names one hook of the contract, as its RPC is named.
type Hook string

// The hooks. Runner.Apply runs all but HookPostClusterModify, which needs
// the builder's clusters for extension backends (not there yet).
const (
	HookPostRouteModify        Hook = "PostRouteModify"
	HookPostVirtualHostModify  Hook = "PostVirtualHostModify"
	HookPostHTTPListenerModify Hook = "PostHTTPListenerModify"
	HookPostTranslateInsert    Hook = "PostTranslateInsert"
	HookPostTranslateModify    Hook = "PostTranslateModify"
	HookPostClusterModify      Hook = "PostClusterModify"
)

// Hooks are every hook, in the order Apply runs them (PostClusterModify
// aside).
var Hooks = []Hook{
	HookPostTranslateInsert, HookPostRouteModify, HookPostVirtualHostModify,
	HookPostHTTPListenerModify, HookPostTranslateModify, HookPostClusterModify,
}

// FailurePolicy says what a failed hook does to the configuration.
type FailurePolicy string

const (
	// FailClosed: any failure keeps the last good configuration (Apply
	// returns no Resources: do not publish).
	FailClosed FailurePolicy = "Closed"
	// FailOpen: the failed hook's change is skipped, its input kept, and
	// the rest applies.
	FailOpen FailurePolicy = "Open"
)

// Defaults of a Registration's unset fields.
const (
	DefaultTimeout        = time.Second
	DefaultPhaseBudget    = 10 * time.Second
	DefaultMaxMessageSize = 64 << 20
	DefaultMaxConcurrency = 8
)

// TLS is how the control plane connects to the extension over TLS.
type TLS struct {
	// CAFile is a PEM bundle of the CAs that sign the extension's
	// certificate. Empty: the system's roots.
	CAFile string
	// CertFile and KeyFile are the control plane's client certificate and
	// key (PEM), for an extension that asks for one; both or neither.
	CertFile, KeyFile string
	// ServerName is the name the extension's certificate must have; empty:
	// the host of Address.
	ServerName string
}

// Registration is the extension of the configuration file: where it is,
// which hooks it answers and how it is called.
type Registration struct {
	// Address is the extension's gRPC target (host:port, or any target
	// grpc.NewClient accepts).
	Address string
	// TLS, when set, is used to connect; nil connects in plaintext.
	TLS *TLS
	// Hooks are the hooks the extension subscribes to: a set (no
	// duplicates). The others are never called.
	Hooks []Hook
	// Timeout is the deadline of each call; 0 is DefaultTimeout.
	Timeout time.Duration
	// FailurePolicy is Closed (the default, for "") or Open.
	FailurePolicy FailurePolicy
	// MaxMessageSize bounds a request and an answer, in bytes
	// (PostTranslateModify sends the whole configuration); 0 is
	// DefaultMaxMessageSize.
	MaxMessageSize int
	// PhaseBudget bounds all the hook calls of one Apply (one rebuild): a
	// hung extension never holds a rebuild longer. 0 is
	// DefaultPhaseBudget; it may not be shorter than Timeout.
	PhaseBudget time.Duration
	// MaxConcurrency bounds the calls in flight at once; 0 is
	// DefaultMaxConcurrency.
	MaxConcurrency int
}

// Subscribed reports whether the extension answers h.
func (r *Registration) Subscribed(h Hook) bool { return slices.Contains(r.Hooks, h) }

// Validate says what is wrong with the registration, every problem at
// once, each naming its field; nil when it is usable.
func (r *Registration) Validate() error {
	var errs []error
	if r.Address == "" {
		errs = append(errs, errors.New("extension.address: required (host:port of the extension's gRPC server)"))
	}
	if t := r.TLS; t != nil {
		if (t.CertFile == "") != (t.KeyFile == "") {
			errs = append(errs, errors.New("extension.tls: certFile and keyFile go together (the client certificate and its key)"))
		}
	}
	if len(r.Hooks) == 0 {
		errs = append(errs, fmt.Errorf("extension.hooks: subscribe to at least one of %v", Hooks))
	}
	seen := map[Hook]bool{}
	for _, h := range r.Hooks {
		switch {
		case !slices.Contains(Hooks, h):
			errs = append(errs, fmt.Errorf("extension.hooks: unknown hook %q (one of %v)", h, Hooks))
		case seen[h]:
			errs = append(errs, fmt.Errorf("extension.hooks: %s listed twice", h))
		}
		seen[h] = true
	}
	if r.Timeout < 0 {
		errs = append(errs, fmt.Errorf("extension.timeout: %v is negative", r.Timeout))
	}
	switch r.FailurePolicy {
	case "", FailClosed, FailOpen:
	default:
		errs = append(errs, fmt.Errorf("extension.failurePolicy: %q is neither Closed nor Open", r.FailurePolicy))
	}
	if r.MaxMessageSize < 0 {
		errs = append(errs, fmt.Errorf("extension.maxMessageSize: %d is negative", r.MaxMessageSize))
	}
	if r.MaxConcurrency < 0 {
		errs = append(errs, fmt.Errorf("extension.maxConcurrency: %d is negative", r.MaxConcurrency))
	}
	if r.PhaseBudget < 0 {
		errs = append(errs, fmt.Errorf("extension.phaseBudget: %v is negative", r.PhaseBudget))
	} else if d := r.withDefaults(); r.Timeout >= 0 && d.PhaseBudget < d.Timeout {
		errs = append(errs, fmt.Errorf("extension.phaseBudget: %v is shorter than the timeout of one call (%v)", d.PhaseBudget, d.Timeout))
	}
	return errors.Join(errs...)
}

// withDefaults returns r with its unset fields at their defaults.
func (r Registration) withDefaults() Registration {
	if r.Timeout == 0 {
		r.Timeout = DefaultTimeout
	}
	if r.FailurePolicy == "" {
		r.FailurePolicy = FailClosed
	}
	if r.MaxMessageSize == 0 {
		r.MaxMessageSize = DefaultMaxMessageSize
	}
	if r.PhaseBudget == 0 {
		r.PhaseBudget = DefaultPhaseBudget
	}
	if r.MaxConcurrency == 0 {
		r.MaxConcurrency = DefaultMaxConcurrency
	}
	return r
}

// Dial returns a connection to the registration's extension, with its TLS
// settings and message size; opts come after those. The connection is
// lazy (grpc.NewClient): an extension that is down fails the calls, not
// Dial. Dial validates the registration first.
func Dial(reg Registration, opts ...grpc.DialOption) (*grpc.ClientConn, error) {
	if err := reg.Validate(); err != nil {
		return nil, err
	}
	reg = reg.withDefaults()
	creds := insecure.NewCredentials()
	if reg.TLS != nil {
		c, err := reg.TLS.config()
		if err != nil {
			return nil, err
		}
		creds = credentials.NewTLS(c)
	}
	base := []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(reg.MaxMessageSize), grpc.MaxCallSendMsgSize(reg.MaxMessageSize)),
	}
	conn, err := grpc.NewClient(reg.Address, append(base, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("extension.address %q: %w", reg.Address, err)
	}
	return conn, nil
}

// config reads the TLS files.
func (t *TLS) config() (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("extension.tls.caFile: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("extension.tls.caFile %s: no PEM certificate in it", t.CAFile)
		}
		c.RootCAs = pool
	}
	if t.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("extension.tls.certFile/keyFile: %w", err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}
