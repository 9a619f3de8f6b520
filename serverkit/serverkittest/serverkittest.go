// Package serverkittest runs serverkit servers in tests: on loopback port
// 0, serving until the test ends, with a client connection to them.
package serverkittest

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/portcullis/portcullis/serverkit"
)

// Options are serverkit's defaults with both listeners on 127.0.0.1:0.
func Options() serverkit.Options {
	opts := serverkit.DefaultOptions()
	opts.Address, opts.MetricsAddress = "127.0.0.1:0", "127.0.0.1:0"
	return opts
}

// Server is a running server.
type Server struct {
	*serverkit.Server
	// Addr is the gRPC address (host:port); MetricsAddr serves /metrics
	// and /healthz, empty when metrics are disabled.
	Addr, MetricsAddr string
	// Conn is a client connection to Addr, made with the dial options
	// given to Start (plaintext when there are none).
	Conn *grpc.ClientConn
}

// Start builds a server with build (logs discarded; pass Options() or a
// variant of it) and serves it until the test ends, when it is stopped
// and Serve must have returned nil.
func Start(t testing.TB, opts serverkit.Options, build func(serverkit.Options, *slog.Logger) (*serverkit.Server, error), dial ...grpc.DialOption) *Server {
	t.Helper()
	srv, err := build(opts, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	s := &Server{Server: srv, Addr: srv.Addr().String()}
	if m := srv.MetricsAddr(); m != nil {
		s.MetricsAddr = m.String()
	}
	if len(dial) == 0 {
		dial = []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	}
	s.Conn = Dial(t, s.Addr, dial...)
	return s
}

// Dial connects to addr, closing the connection when the test ends.
func Dial(t testing.TB, addr string, opts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() }) // the test is over: nothing to report to
	return conn
}
