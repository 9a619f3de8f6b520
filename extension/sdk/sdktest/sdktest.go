// Package sdktest serves an extension in-process, on an in-memory
// connection, with sdk.Serve, so an extension's tests call its hooks
// through gRPC as Portcullis does.
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
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- sdk.Serve(ctx, lis, srv) }()
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	// Cleanups run last-registered first: the connection closes, then the
	// server stops.
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("sdk.Serve: %v", err)
		}
	})
	t.Cleanup(func() { conn.Close() })
	return conn
}
