package serverkit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"
)

// Server is a gRPC server with its metrics listener, bound but not yet
// serving. Create it with New, then call Serve once.
type Server struct {
	opts     Options
	logger   *slog.Logger
	grpc     *grpc.Server
	health   *health.Server
	lis      net.Listener
	metrics  *http.Server
	mlis     net.Listener  // nil when metrics are disabled
	ready    atomic.Bool   // drives /healthz
	stopping chan struct{} // closed when shutdown begins
}

// NewRegistry returns a Prometheus registry with the Go runtime and process
// collectors, the default for Options.Registry. Servers that add their own
// metrics create it, register on it and pass it in Options.Registry.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// Run is New followed by Serve: it serves until ctx is cancelled, then shuts
// down gracefully.
func Run(ctx context.Context, opts Options, logger *slog.Logger, register func(*grpc.Server)) error {
	s, err := New(opts, logger, register)
	if err != nil {
		return err
	}
	return s.Serve(ctx)
}

// New validates opts, binds both listeners and builds the gRPC server with
// health, reflection, metrics and panic recovery; register adds the caller's
// services. Binding here (not in Serve) lets callers use port 0 and read
// the real address from Addr.
func New(opts Options, logger *slog.Logger, register func(*grpc.Server)) (*Server, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.Default()
	}
	reg := opts.Registry
	if reg == nil {
		reg = NewRegistry()
	}
	gm, err := newGRPCMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("registering gRPC metrics: %w", err)
	}
	tlsCfg, err := serverTLSConfig(&opts)
	if err != nil {
		return nil, err
	}

	stopping := make(chan struct{})
	ic := interceptors{metrics: gm, rec: recoverer{logger: logger}, stopping: stopping}
	serverOpts := []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(ic.unary),
		grpc.ChainStreamInterceptor(ic.stream),
		// Envoy may be configured with HTTP/2 keepalive pings; grpc-go's
		// default policy (5m) would answer frequent pings with GOAWAY.
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second, PermitWithoutStream: true}),
	}
	if tlsCfg != nil {
		serverOpts = append(serverOpts, grpc.Creds(credentials.NewTLS(tlsCfg)))
	}
	if opts.TracerProvider != nil {
		serverOpts = append(serverOpts, tracingOption(opts.TracerProvider))
	}
	serverOpts = append(serverOpts, opts.GRPCOptions...)
	s := &Server{opts: opts, logger: logger, grpc: grpc.NewServer(serverOpts...), health: health.NewServer(), stopping: stopping}
	healthpb.RegisterHealthServer(s.grpc, s.health)
	reflection.Register(s.grpc)
	if register != nil {
		register(s.grpc)
	}
	gm.initialize(s.grpc)

	s.lis, err = net.Listen("tcp", opts.Address)
	if err != nil {
		return nil, fmt.Errorf("gRPC listener: %w", err)
	}
	if opts.MetricsAddress != "" {
		s.mlis, err = net.Listen("tcp", opts.MetricsAddress)
		if err != nil {
			_ = s.lis.Close() // unused yet; the metrics listener's error is the one to report
			return nil, fmt.Errorf("metrics listener: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
		mux.HandleFunc("GET /healthz", s.healthz)
		s.metrics = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	}
	return s, nil
}

// Addr is the bound gRPC address.
func (s *Server) Addr() net.Addr { return s.lis.Addr() }

// MetricsAddr is the bound metrics address, or nil when metrics are disabled.
func (s *Server) MetricsAddr() net.Addr {
	if s.mlis == nil {
		return nil
	}
	return s.mlis.Addr()
}

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	if !s.ready.Load() {
		http.Error(w, "shutting down", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("ok\n"))
}

// Serve serves until ctx is cancelled or a listener fails, then shuts down:
// health turns NOT_SERVING, in-flight RPCs get ShutdownGrace to finish, then
// the server stops hard. It returns nil after a requested shutdown.
func (s *Server) Serve(ctx context.Context) error {
	for name := range s.grpc.GetServiceInfo() {
		s.health.SetServingStatus(name, healthpb.HealthCheckResponse_SERVING)
	}
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	s.ready.Store(true)

	// Each goroutine sends exactly one value: nil after a requested stop.
	errc := make(chan error, 2)
	running := 1
	go func() { errc <- s.grpc.Serve(s.lis) }()
	s.logger.Info("serving gRPC", "address", s.Addr().String(), "tls", s.opts.TLSCertPath != "", "client_cert_required", s.opts.TLSCAPath != "")
	if s.metrics != nil {
		running++
		go func() {
			err := s.metrics.Serve(s.mlis)
			if errors.Is(err, http.ErrServerClosed) {
				err = nil
			}
			errc <- err
		}()
		s.logger.Info("serving metrics and /healthz", "address", s.MetricsAddr().String())
	}

	var first error
	select {
	case <-ctx.Done():
	case first = <-errc:
		running--
		if first == nil {
			first = errors.New("server stopped unexpectedly")
		}
		s.logger.Error("listener failed", "error", first)
	}
	s.shutdown()
	for ; running > 0; running-- {
		if err := <-errc; err != nil && first == nil {
			first = err
		}
	}
	s.logger.Info("stopped")
	return first
}

func (s *Server) shutdown() {
	s.logger.Info("shutting down", "grace", s.opts.ShutdownGrace.String())
	s.ready.Store(false)
	close(s.stopping)
	s.health.Shutdown() // every service reports NOT_SERVING from now on

	done := make(chan struct{})
	go func() {
		s.grpc.GracefulStop()
		close(done)
	}()
	timer := time.NewTimer(s.opts.ShutdownGrace)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		s.logger.Warn("grace period over, closing remaining RPCs")
		s.grpc.Stop()
		<-done
	}

	// Metrics stay up while RPCs drain, so the drain itself is observable.
	if s.metrics != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := s.metrics.Shutdown(ctx); err != nil {
			// Shutdown timed out on open connections: drop them. Close's
			// error is only the listener's, which Shutdown already closed.
			_ = s.metrics.Close()
		}
	}
}
