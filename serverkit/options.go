// Package serverkit is the plumbing shared by Portcullis's gRPC servers
// (authserver, extprocserver): flags, TLS and mTLS, gRPC health and
// reflection, Prometheus metrics and /healthz on a separate port, panic
// recovery, structured logs, OpenTelemetry tracing and graceful shutdown. Each server only
// registers its own gRPC service.
package serverkit

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
)

// Defaults. Both listeners bind to loopback so that nothing is exposed by
// accident; in a pod, pass --address=:9443 --metrics-address=:9090.
const (
	DefaultAddress        = "127.0.0.1:9443"
	DefaultMetricsAddress = "127.0.0.1:9090"
	DefaultShutdownGrace  = 10 * time.Second
)

// Options configure a Server. The zero value is not useful; start from
// DefaultOptions.
type Options struct {
	// Address is the gRPC listen address (host:port).
	Address string
	// MetricsAddress serves /metrics and /healthz over plain HTTP. It is a
	// separate listener so that health and metrics can never become a way
	// around authorization. Empty disables it.
	MetricsAddress string

	// TLSCertPath and TLSKeyPath enable TLS when both are set.
	TLSCertPath string
	TLSKeyPath  string
	// TLSCAPath, when set, makes TLS mutual: clients must present a
	// certificate signed by one of the CAs in this PEM file.
	TLSCAPath string

	// ShutdownGrace bounds how long in-flight RPCs may run after shutdown
	// starts; then the server stops hard.
	ShutdownGrace time.Duration

	// LogLevel is debug, info, warn or error; LogFormat is text or json.
	LogLevel  string
	LogFormat string

	// Registry receives the server's metrics and is what /metrics serves.
	// Nil means a fresh NewRegistry(). Register your own collectors on it
	// before calling New.
	Registry *prometheus.Registry

	// TracerProvider, when set, continues the trace of every call (W3C
	// trace context or B3 in the metadata) with a server span; the
	// handlers find it in their context. Nil: no tracing and no cost
	// (NewTracerProviderFromEnv gives nil unless OTEL_* asks for traces).
	TracerProvider trace.TracerProvider

	// GRPCOptions are added to the gRPC server's options (transport
	// tuning such as window sizes or stream workers; a server that knows
	// its traffic sets them, there are no flags for them).
	GRPCOptions []grpc.ServerOption
}

// DefaultOptions returns the documented defaults.
func DefaultOptions() Options {
	return Options{
		Address:        DefaultAddress,
		MetricsAddress: DefaultMetricsAddress,
		ShutdownGrace:  DefaultShutdownGrace,
		LogLevel:       "info",
		LogFormat:      "text",
	}
}

// AddFlags registers the server flags on fs, using the current field values
// as defaults (so a binary can change a default before calling it).
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Address, "address", o.Address, "gRPC listen address (host:port); use :PORT to listen on all interfaces")
	fs.StringVar(&o.MetricsAddress, "metrics-address", o.MetricsAddress, "HTTP listen address for /metrics and /healthz (host:port); empty disables it")
	fs.StringVar(&o.TLSCertPath, "tls-cert-path", o.TLSCertPath, "PEM server certificate; with --tls-key-path enables TLS")
	fs.StringVar(&o.TLSKeyPath, "tls-key-path", o.TLSKeyPath, "PEM private key for --tls-cert-path")
	fs.StringVar(&o.TLSCAPath, "tls-ca-path", o.TLSCAPath, "PEM CA bundle; when set, clients must present a certificate signed by it (mutual TLS)")
	fs.DurationVar(&o.ShutdownGrace, "shutdown-grace", o.ShutdownGrace, "how long in-flight RPCs may finish after SIGTERM before the server stops hard")
	fs.StringVar(&o.LogLevel, "log-level", o.LogLevel, "log level: debug, info, warn or error")
	fs.StringVar(&o.LogFormat, "log-format", o.LogFormat, "log format: text or json")
}

// Validate reports flag combinations that cannot work.
func (o *Options) Validate() error {
	var errs []error
	if o.Address == "" {
		errs = append(errs, errors.New("--address must not be empty"))
	}
	if (o.TLSCertPath == "") != (o.TLSKeyPath == "") {
		errs = append(errs, errors.New("--tls-cert-path and --tls-key-path must be set together"))
	}
	if o.TLSCAPath != "" && o.TLSCertPath == "" {
		errs = append(errs, errors.New("--tls-ca-path requires --tls-cert-path and --tls-key-path (client verification needs TLS)"))
	}
	if o.ShutdownGrace < 0 {
		errs = append(errs, errors.New("--shutdown-grace must not be negative"))
	}
	if _, err := parseLevel(o.LogLevel); err != nil {
		errs = append(errs, err)
	}
	if o.LogFormat != "text" && o.LogFormat != "json" {
		errs = append(errs, fmt.Errorf("--log-format must be text or json, not %q", o.LogFormat))
	}
	return errors.Join(errs...)
}

// NewLogger builds the slog.Logger that --log-level and --log-format ask for.
func (o *Options) NewLogger(w io.Writer) (*slog.Logger, error) {
	level, err := parseLevel(o.LogLevel)
	if err != nil {
		return nil, err
	}
	ho := &slog.HandlerOptions{Level: level}
	switch o.LogFormat {
	case "json":
		return slog.New(slog.NewJSONHandler(w, ho)), nil
	case "text", "":
		return slog.New(slog.NewTextHandler(w, ho)), nil
	default:
		return nil, fmt.Errorf("--log-format must be text or json, not %q", o.LogFormat)
	}
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if s == "" {
		return slog.LevelInfo, nil
	}
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("--log-level must be debug, info, warn or error, not %q", s)
	}
	return l, nil
}
