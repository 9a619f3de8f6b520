// Package sdktest serves an extension in-process, on an in-memory
// connection or a loopback port, with sdk.Serve, so an extension's tests
// call its hooks through gRPC as Portcullis does; Run calls all of them in
// Portcullis's order on a configuration and returns the result.
package sdktest

import (
	"context"
	"net"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	"github.com/portcullis/portcullis/extension/api/v1alpha1"
	"github.com/portcullis/portcullis/extension/sdk"
)

// Serve serves srv until the test ends and returns a client of it.
func Serve(t testing.TB, srv v1alpha1.ExtensionServerServer) v1alpha1.ExtensionServerClient {
	t.Helper()
	return v1alpha1.NewExtensionServerClient(Conn(t, srv))
}

// Conn serves srv until the test ends and returns a connection to it, for
// clients of other services of the server (health).
func Conn(t testing.TB, srv v1alpha1.ExtensionServerServer) *grpc.ClientConn {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	serve(t, lis, srv)
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	// Cleanups run last-registered first: the connection closes, then the
	// server stops.
	t.Cleanup(func() { _ = conn.Close() }) // the test is over: nothing to report to
	return conn
}

// Listen serves srv on a loopback TCP port, with opts, until the test ends
// and returns its address, for code under test that dials the extension
// itself.
func Listen(t testing.TB, srv v1alpha1.ExtensionServerServer, opts ...grpc.ServerOption) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serve(t, lis, srv, opts...)
	return lis.Addr().String()
}

// serve serves srv on lis with sdk.Serve until the test ends, and fails the
// test if serving fails.
func serve(t testing.TB, lis net.Listener, srv v1alpha1.ExtensionServerServer, opts ...grpc.ServerOption) {
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- sdk.Serve(ctx, lis, srv, opts...) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("sdk.Serve: %v", err)
		}
	})
}
