package serverkit_test

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/portcullis/portcullis/serverkit"
	"github.com/portcullis/portcullis/serverkit/certs"
)

// testService is a hand-written gRPC service (no generated code needed):
// Ok returns, Panic panics, Block waits for release or cancellation;
// PanicStream is a bidirectional stream that panics.
const testService = "serverkit.test.Test"

type testImpl struct {
	entered chan struct{} // Block has started
	release chan struct{} // Block may return
	seen    atomic.Value  // trace.SpanContext the last Ok call ran in
}

func handler(name string, f func(ctx context.Context) error) grpc.MethodHandler {
	return func(srv any, ctx context.Context, dec func(any) error, icpt grpc.UnaryServerInterceptor) (any, error) {
		in := new(emptypb.Empty)
		if err := dec(in); err != nil {
			return nil, err
		}
		h := func(ctx context.Context, _ any) (any, error) { return &emptypb.Empty{}, f(ctx) }
		if icpt == nil {
			return h(ctx, in)
		}
		return icpt(ctx, in, &grpc.UnaryServerInfo{Server: srv, FullMethod: "/" + testService + "/" + name}, h)
	}
}

func (ti *testImpl) register(s *grpc.Server) {
	s.RegisterService(&grpc.ServiceDesc{
		ServiceName: testService,
		HandlerType: (*any)(nil),
		Methods: []grpc.MethodDesc{
			{MethodName: "Ok", Handler: handler("Ok", func(ctx context.Context) error {
				ti.seen.Store(trace.SpanContextFromContext(ctx))
				return nil
			})},
			{MethodName: "Panic", Handler: handler("Panic", func(context.Context) error { panic("boom") })},
			{MethodName: "Block", Handler: handler("Block", func(ctx context.Context) error {
				ti.entered <- struct{}{}
				select {
				case <-ti.release:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			})},
		},
		Streams: []grpc.StreamDesc{{StreamName: "PanicStream", ClientStreams: true, ServerStreams: true,
			Handler: func(any, grpc.ServerStream) error { panic("boom") }}},
	}, ti)
}

type running struct {
	srv    *serverkit.Server
	cancel context.CancelFunc
	done   chan error
	impl   *testImpl
}

func start(t *testing.T, mutate func(*serverkit.Options)) *running {
	t.Helper()
	opts := serverkit.DefaultOptions()
	opts.Address = "127.0.0.1:0"
	opts.MetricsAddress = "127.0.0.1:0"
	opts.ShutdownGrace = 5 * time.Second
	if mutate != nil {
		mutate(&opts)
	}
	impl := &testImpl{entered: make(chan struct{}, 1), release: make(chan struct{})}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	srv, err := serverkit.New(opts, logger, impl.register)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{srv: srv, cancel: cancel, done: make(chan error, 1), impl: impl}
	go func() { r.done <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-r.done:
			if err != nil {
				t.Errorf("Serve = %v after its context was canceled", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("server did not stop")
		}
	})
	return r
}

func (r *running) dial(t *testing.T, creds credentials.TransportCredentials) *grpc.ClientConn {
	t.Helper()
	if creds == nil {
		creds = insecure.NewCredentials()
	}
	conn, err := grpc.NewClient(r.srv.Addr().String(), grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func call(ctx context.Context, conn *grpc.ClientConn, method string) error {
	return conn.Invoke(ctx, "/"+testService+"/"+method, &emptypb.Empty{}, &emptypb.Empty{})
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestHealthServing(t *testing.T) {
	r := start(t, nil)
	hc := healthpb.NewHealthClient(r.dial(t, nil))
	for _, svc := range []string{"", testService} {
		resp, err := hc.Check(ctxT(t), &healthpb.HealthCheckRequest{Service: svc})
		if err != nil {
			t.Fatalf("Check(%q): %v", svc, err)
		}
		if resp.Status != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("Check(%q) = %v, want SERVING", svc, resp.Status)
		}
	}
	if code, body := httpGet(t, "http://"+r.srv.MetricsAddr().String()+"/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz = %d %q", code, body)
	}
}

func TestReflectionListsServices(t *testing.T) {
	r := start(t, nil)
	stream, err := reflectionpb.NewServerReflectionClient(r.dial(t, nil)).ServerReflectionInfo(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&reflectionpb.ServerReflectionRequest{
		MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{},
	}); err != nil {
		t.Fatal(err)
	}
	resp, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		names = append(names, s.Name)
	}
	for _, want := range []string{testService, "grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection"} {
		if !slices.Contains(names, want) {
			t.Errorf("services %v lack %s", names, want)
		}
	}
}

func TestMutualTLS(t *testing.T) {
	ca, err := certs.NewCA("test-ca")
	if err != nil {
		t.Fatal(err)
	}
	files, err := ca.WriteFiles(t.TempDir(), "localhost", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	r := start(t, func(o *serverkit.Options) {
		o.TLSCertPath, o.TLSKeyPath, o.TLSCAPath = files.ServerCert, files.ServerKey, files.CA
	})
	clientCert, err := tls.LoadX509KeyPair(files.ClientCert, files.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	other, err := certs.NewCA("other-ca")
	if err != nil {
		t.Fatal(err)
	}
	strangerCert, err := other.IssueTLS("stranger", nil, true)
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name   string
		certs  []tls.Certificate
		wantOK bool
	}{
		{"no client certificate", nil, false},
		{"certificate from another CA", []tls.Certificate{strangerCert}, false},
		{"certificate signed by the CA", []tls.Certificate{clientCert}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			creds := credentials.NewTLS(&tls.Config{RootCAs: ca.Pool(), Certificates: tc.certs, ServerName: "localhost"})
			err := call(ctxT(t), r.dial(t, creds), "Ok")
			if tc.wantOK && err != nil {
				t.Fatalf("call failed: %v", err)
			}
			if !tc.wantOK && status.Code(err) != codes.Unavailable {
				t.Fatalf("call error = %v, want Unavailable (handshake refused)", err)
			}
		})
	}

	t.Run("plaintext client", func(t *testing.T) {
		if err := call(ctxT(t), r.dial(t, nil), "Ok"); status.Code(err) != codes.Unavailable {
			t.Fatalf("plaintext call error = %v, want Unavailable", err)
		}
	})
}

func TestTLSWithoutClientVerification(t *testing.T) {
	ca, err := certs.NewCA("test-ca")
	if err != nil {
		t.Fatal(err)
	}
	files, err := ca.WriteFiles(t.TempDir(), "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	r := start(t, func(o *serverkit.Options) { o.TLSCertPath, o.TLSKeyPath = files.ServerCert, files.ServerKey })
	if err := call(ctxT(t), r.dial(t, credentials.NewTLS(&tls.Config{RootCAs: ca.Pool()})), "Ok"); err != nil {
		t.Fatalf("call: %v", err)
	}
}

func TestMetricsCountCalls(t *testing.T) {
	r := start(t, nil)
	// Before any call, every method's series exist at zero.
	_, before := httpGet(t, "http://"+r.srv.MetricsAddr().String()+"/metrics")
	for _, want := range []string{
		`grpc_server_handled_total{grpc_code="OK",grpc_method="Check",grpc_service="grpc.health.v1.Health",grpc_type="unary"} 0`,
		`grpc_server_handled_total{grpc_code="Unavailable",grpc_method="Watch",grpc_service="grpc.health.v1.Health",grpc_type="server_stream"} 0`,
		`grpc_server_handling_seconds_count{grpc_method="Check",grpc_service="grpc.health.v1.Health",grpc_type="unary"} 0`,
	} {
		if !strings.Contains(before, want) {
			t.Errorf("/metrics before any call lacks %s", want)
		}
	}
	conn := r.dial(t, nil)
	if _, err := healthpb.NewHealthClient(conn).Check(ctxT(t), &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	_ = call(ctxT(t), conn, "Panic")

	_, body := httpGet(t, "http://"+r.srv.MetricsAddr().String()+"/metrics")
	for _, want := range []string{
		`grpc_server_handled_total{grpc_code="OK",grpc_method="Check",grpc_service="grpc.health.v1.Health",grpc_type="unary"} 1`,
		`grpc_server_handled_total{grpc_code="Internal",grpc_method="Panic",grpc_service="serverkit.test.Test",grpc_type="unary"} 1`,
		`grpc_server_handling_seconds_count{grpc_method="Check",grpc_service="grpc.health.v1.Health",grpc_type="unary"} 1`,
		`go_goroutines`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// A stream's panic is recovered and counted as Internal, like a unary one.
func TestStreamPanicBecomesInternal(t *testing.T) {
	r := start(t, nil)
	conn := r.dial(t, nil)
	s, err := conn.NewStream(ctxT(t), &grpc.StreamDesc{ClientStreams: true, ServerStreams: true}, "/"+testService+"/PanicStream")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RecvMsg(&emptypb.Empty{}); status.Code(err) != codes.Internal || strings.Contains(err.Error(), "boom") {
		t.Fatalf("PanicStream error = %v, want Internal without the panic value", err)
	}
	_, body := httpGet(t, "http://"+r.srv.MetricsAddr().String()+"/metrics")
	want := `grpc_server_handled_total{grpc_code="Internal",grpc_method="PanicStream",grpc_service="serverkit.test.Test",grpc_type="bidi_stream"} 1`
	if !strings.Contains(body, want) {
		t.Errorf("/metrics lacks %s", want)
	}
}

func TestPanicBecomesInternal(t *testing.T) {
	r := start(t, nil)
	conn := r.dial(t, nil)
	err := call(ctxT(t), conn, "Panic")
	if status.Code(err) != codes.Internal || strings.Contains(err.Error(), "boom") {
		t.Fatalf("Panic error = %v, want Internal without the panic value", err)
	}
	if err := call(ctxT(t), conn, "Ok"); err != nil {
		t.Fatalf("server unusable after panic: %v", err)
	}
}

func TestGracefulShutdown(t *testing.T) {
	r := start(t, nil)
	conn := r.dial(t, nil)
	watch, err := healthpb.NewHealthClient(conn).Watch(ctxT(t), &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := watch.Recv(); err != nil || resp.Status != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("first health update = %v, %v", resp, err)
	}

	inflight := make(chan error, 1)
	go func() { inflight <- call(ctxT(t), conn, "Block") }()
	<-r.impl.entered

	r.cancel()
	if resp, err := watch.Recv(); err != nil || resp.Status != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("health during shutdown = %v, %v; want NOT_SERVING", resp, err)
	}
	if _, err := watch.Recv(); err == nil {
		t.Fatal("health Watch stream still open after NOT_SERVING")
	}
	if code, _ := httpGet(t, "http://"+r.srv.MetricsAddr().String()+"/healthz"); code != http.StatusServiceUnavailable {
		t.Errorf("/healthz during shutdown = %d, want 503", code)
	}
	select {
	case err := <-r.done:
		t.Fatalf("Serve returned %v while an RPC was in flight", err)
	case <-time.After(100 * time.Millisecond):
	}

	close(r.impl.release)
	if err := <-inflight; err != nil {
		t.Fatalf("in-flight RPC failed during graceful shutdown: %v", err)
	}
	select {
	case err := <-r.done:
		if err != nil {
			t.Fatalf("Serve = %v", err)
		}
		r.done <- nil // for the cleanup
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return")
	}
}

func TestShutdownGraceBoundsStuckRPCs(t *testing.T) {
	r := start(t, func(o *serverkit.Options) { o.ShutdownGrace = 200 * time.Millisecond })
	conn := r.dial(t, nil)
	inflight := make(chan error, 1)
	go func() { inflight <- call(ctxT(t), conn, "Block") }() // never released
	<-r.impl.entered

	begin := time.Now()
	r.cancel()
	select {
	case err := <-r.done:
		if err != nil {
			t.Fatalf("Serve = %v", err)
		}
		r.done <- nil
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after the grace period")
	}
	t.Logf("stopped after %v", time.Since(begin))
	if err := <-inflight; status.Code(err) != codes.Unavailable && status.Code(err) != codes.Canceled {
		t.Fatalf("stuck RPC error = %v, want Unavailable or Canceled", err)
	}
}

func TestMetricsDisabled(t *testing.T) {
	r := start(t, func(o *serverkit.Options) { o.MetricsAddress = "" })
	if r.srv.MetricsAddr() != nil {
		t.Fatalf("MetricsAddr = %v, want nil", r.srv.MetricsAddr())
	}
	if err := call(ctxT(t), r.dial(t, nil), "Ok"); err != nil {
		t.Fatal(err)
	}
}

func TestNewRejectsBadTLSFiles(t *testing.T) {
	dir := t.TempDir()
	bogus := filepath.Join(dir, "bogus.pem")
	if err := os.WriteFile(bogus, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	ca, _ := certs.NewCA("ca")
	files, err := ca.WriteFiles(dir, "localhost")
	if err != nil {
		t.Fatal(err)
	}
	for name, o := range map[string]serverkit.Options{
		"bad key pair": {TLSCertPath: bogus, TLSKeyPath: bogus},
		"bad CA":       {TLSCertPath: files.ServerCert, TLSKeyPath: files.ServerKey, TLSCAPath: bogus},
		"missing CA":   {TLSCertPath: files.ServerCert, TLSKeyPath: files.ServerKey, TLSCAPath: filepath.Join(dir, "nope")},
	} {
		o.Address, o.LogFormat = "127.0.0.1:0", "text"
		if _, err := serverkit.New(o, nil, nil); err == nil {
			t.Errorf("%s: New succeeded", name)
		}
	}
}

func TestGRPCOptionsApply(t *testing.T) {
	var seen atomic.Int32
	r := start(t, func(o *serverkit.Options) {
		o.GRPCOptions = []grpc.ServerOption{grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			seen.Add(1)
			return h(ctx, req)
		})}
	})
	if _, err := healthpb.NewHealthClient(r.dial(t, nil)).Check(ctxT(t), &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	if seen.Load() != 1 {
		t.Errorf("the interceptor from GRPCOptions ran %d times, want 1", seen.Load())
	}
}
