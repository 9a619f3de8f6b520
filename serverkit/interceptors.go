package serverkit

import (
	"context"
	"errors"
	"log/slog"
	"runtime/debug"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// grpcMetrics uses the metric names of go-grpc-prometheus so that existing
// dashboards and alerts work unchanged.
type grpcMetrics struct {
	handled  *prometheus.CounterVec
	duration *prometheus.HistogramVec
	// series of every registered method, by full method name: looked up
	// once by initialize, read-only while serving (a label lookup hashes
	// every label value on each call).
	series map[string]*methodSeries
}

type methodSeries struct {
	handled  [codes.Unauthenticated + 1]prometheus.Counter
	duration prometheus.Observer
}

func newGRPCMetrics(reg prometheus.Registerer) (*grpcMetrics, error) {
	handled := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "grpc_server_handled_total",
		Help: "Total number of RPCs completed on the server, regardless of success or failure.",
	}, []string{"grpc_type", "grpc_service", "grpc_method", "grpc_code"})
	duration := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "grpc_server_handling_seconds",
		Help:    "Histogram of response latency (seconds) of RPCs handled by the server.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	}, []string{"grpc_type", "grpc_service", "grpc_method"})
	var err error
	if handled, err = registerOrReuse(reg, handled); err != nil {
		return nil, err
	}
	if duration, err = registerOrReuse(reg, duration); err != nil {
		return nil, err
	}
	return &grpcMetrics{handled: handled, duration: duration}, nil
}

// registerOrReuse lets several servers in one process (tests, mostly) share
// a registry.
func registerOrReuse[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing, nil
			}
		}
		return c, err
	}
	return c, nil
}

// initialize creates the series of every method of srv at zero, for every
// code (as go-grpc-prometheus's InitializeMetrics does): a scrape shows the
// services from the start, and rate() and absence alerts work before the
// first call.
func (m *grpcMetrics) initialize(srv *grpc.Server) {
	m.series = map[string]*methodSeries{}
	for service, info := range srv.GetServiceInfo() {
		for _, method := range info.Methods {
			typ := grpcType(method.IsClientStream, method.IsServerStream)
			s := &methodSeries{duration: m.duration.WithLabelValues(typ, service, method.Name)}
			for c := codes.OK; c <= codes.Unauthenticated; c++ {
				s.handled[c] = m.handled.WithLabelValues(typ, service, method.Name, c.String())
			}
			m.series["/"+service+"/"+method.Name] = s
		}
	}
}

func (m *grpcMetrics) observe(typ, fullMethod string, start time.Time, err error) {
	code := status.Code(err)
	if s := m.series[fullMethod]; s != nil && int(code) < len(s.handled) {
		s.handled[code].Inc()
		s.duration.Observe(time.Since(start).Seconds())
		return
	}
	service, method := splitMethod(fullMethod)
	m.handled.WithLabelValues(typ, service, method, code.String()).Inc()
	m.duration.WithLabelValues(typ, service, method).Observe(time.Since(start).Seconds())
}

// interceptors are serverkit's, one per call type: metrics (outermost, so
// that recovered panics count as Internal), panic recovery, and the end of
// health watches at shutdown. One interceptor rather than a chain of
// three: gRPC's chain allocates a closure per interceptor on every call
// and deepens the stack of every stream's goroutine (ext_proc opens a
// stream per HTTP request).
type interceptors struct {
	metrics  *grpcMetrics
	rec      recoverer
	stopping <-chan struct{}
}

func (i interceptors) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
	start := time.Now()
	defer func() {
		if p := recover(); p != nil {
			resp, err = nil, i.rec.recovered(info.FullMethod, p)
		}
		i.metrics.observe("unary", info.FullMethod, start, err)
	}()
	return handler(ctx, req)
}

func (i interceptors) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
	start := time.Now()
	defer func() {
		if p := recover(); p != nil {
			err = i.rec.recovered(info.FullMethod, p)
		}
		i.metrics.observe(grpcType(info.IsClientStream, info.IsServerStream), info.FullMethod, start, err)
	}()
	if info.FullMethod == healthpb.Health_Watch_FullMethodName {
		return endWatches{i.stopping}.stream(srv, ss, handler)
	}
	return handler(srv, ss)
}

// grpcType is go-grpc-prometheus's grpc_type label of a method.
func grpcType(clientStream, serverStream bool) string {
	switch {
	case clientStream && serverStream:
		return "bidi_stream"
	case clientStream:
		return "client_stream"
	case serverStream:
		return "server_stream"
	}
	return "unary"
}

// splitMethod turns "/pkg.Service/Method" into ("pkg.Service", "Method").
func splitMethod(full string) (string, string) {
	full = strings.TrimPrefix(full, "/")
	if i := strings.LastIndex(full, "/"); i >= 0 {
		return full[:i], full[i+1:]
	}
	return "unknown", full
}

// recoverer turns a handler panic into codes.Internal: the panic is logged
// with its stack, the caller sees no detail, and the process keeps serving.
type recoverer struct{ logger *slog.Logger }

func (r recoverer) recovered(method string, p any) error {
	r.logger.Error("panic in gRPC handler", "method", method, "panic", p, "stack", string(debug.Stack()))
	return status.Error(codes.Internal, "internal error")
}

// endWatches ends gRPC health Watch streams once shutdown has begun and the
// stream has sent its update (NOT_SERVING), so that long-lived watches from
// clients with health checking enabled do not hold GracefulStop for the
// whole grace period.
type endWatches struct{ stopping <-chan struct{} }

// stream runs a health Watch.
func (e endWatches) stream(srv any, ss grpc.ServerStream, handler grpc.StreamHandler) error {
	ctx, cancel := context.WithCancel(ss.Context())
	defer cancel()
	return handler(srv, &watchStream{ServerStream: ss, ctx: ctx, cancel: cancel, stopping: e.stopping})
}

type watchStream struct {
	grpc.ServerStream
	ctx      context.Context
	cancel   context.CancelFunc
	stopping <-chan struct{}
}

func (w *watchStream) Context() context.Context { return w.ctx }

func (w *watchStream) SendMsg(m any) error {
	err := w.ServerStream.SendMsg(m)
	select {
	case <-w.stopping:
		w.cancel()
	default:
	}
	return err
}
