package harness

import (
	"context"
	"net"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
)

// GRPCEchoHeaderPrefix prefixes, in the response headers of GRPCEcho's
// calls, each request metadata key the server received.
const GRPCEchoHeaderPrefix = "echo-"

// GRPCEcho is a gRPC upstream (h2c) serving grpc.health.v1.Health (SERVING)
// and grpc.testing.TestService's EmptyCall and UnaryCall. UnaryCall answers
// with ServerId = the server's name (to tell upstreams apart) and Hostname
// = the :authority it got; both calls send back the request metadata they
// got as response headers, each key prefixed with GRPCEchoHeaderPrefix.
type GRPCEcho struct {
	testgrpc.UnimplementedTestServiceServer
	Name string
	// Calls counts the TestService calls answered.
	Calls atomic.Int64
}

// NewGRPCServer is a gRPC server serving e: what StartGRPCEcho and the
// echoserver's gRPC mode serve.
func NewGRPCServer(e *GRPCEcho) *grpc.Server {
	srv := grpc.NewServer()
	testgrpc.RegisterTestServiceServer(srv, e)
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus("grpc.testing.TestService", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(srv, hs)
	return srv
}

// StartGRPCEcho starts a GRPCEcho on 127.0.0.1, stopped when the test
// ends, and returns it with its address.
func StartGRPCEcho(t testing.TB, name string) (*GRPCEcho, string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("grpc echo %s: %v", name, err)
	}
	e := &GRPCEcho{Name: name}
	srv := NewGRPCServer(e)
	go func() { _ = srv.Serve(l) }() // returns when the cleanup stops it
	t.Cleanup(srv.Stop)
	return e, l.Addr().String()
}

// EmptyCall implements grpc.testing.TestService.
func (e *GRPCEcho) EmptyCall(ctx context.Context, _ *testgrpc.Empty) (*testgrpc.Empty, error) {
	e.Calls.Add(1)
	return &testgrpc.Empty{}, e.echoMetadata(ctx)
}

// UnaryCall implements grpc.testing.TestService.
func (e *GRPCEcho) UnaryCall(ctx context.Context, req *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	e.Calls.Add(1)
	resp := &testgrpc.SimpleResponse{ServerId: e.Name, Payload: req.GetPayload()}
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		if a := md.Get(":authority"); len(a) > 0 {
			resp.Hostname = a[0]
		}
	}
	return resp, e.echoMetadata(ctx)
}

// echoMetadata sends the request metadata back as response headers.
func (e *GRPCEcho) echoMetadata(ctx context.Context) error {
	in, _ := metadata.FromIncomingContext(ctx)
	out := metadata.MD{}
	for k, vs := range in {
		if strings.HasPrefix(k, ":") || strings.HasPrefix(k, "grpc-") {
			continue
		}
		out[GRPCEchoHeaderPrefix+k] = vs
	}
	return grpc.SetHeader(ctx, out)
}
