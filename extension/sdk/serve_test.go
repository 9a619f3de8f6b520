package sdk_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/portcullis/portcullis/extension/api/v1alpha1"
	"github.com/portcullis/portcullis/extension/sdk"
)

// TestServeLoopback serves on a real TCP listener, calls a hook, then ends
// the context: Serve returns nil and the port is closed.
func TestServeLoopback(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- sdk.Serve(ctx, lis, &sdk.Server{}) }()

	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	resp, err := v1alpha1.NewExtensionServerClient(conn).PostTranslateInsert(ctxT(t), &v1alpha1.PostTranslateInsertRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Clusters)+len(resp.Secrets) != 0 {
		t.Errorf("got %v", resp)
	}
	// A listener over gRPC's default 4 MiB (the HTTPS listener of a few
	// thousand hosts) goes there and back.
	big := &listenerv3.Listener{Name: "big"}
	for i := range 6000 {
		big.FilterChains = append(big.FilterChains, &listenerv3.FilterChain{Name: fmt.Sprintf("%d-%s", i, strings.Repeat("x", 1000))})
	}
	call := grpc.MaxCallRecvMsgSize(sdk.MaxMessageSize)
	lr, err := v1alpha1.NewExtensionServerClient(conn).PostHTTPListenerModify(ctxT(t), &v1alpha1.PostHTTPListenerModifyRequest{Listener: big},
		call, grpc.MaxCallSendMsgSize(sdk.MaxMessageSize))
	if err != nil || len(lr.GetListener().GetFilterChains()) != 6000 {
		t.Errorf("a 6 MB listener: %v", err)
	}

	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(sdk.ShutdownGrace + 5*time.Second):
		t.Fatal("Serve did not return after its context ended")
	}
	if c, err := net.DialTimeout("tcp", lis.Addr().String(), time.Second); err == nil {
		c.Close()
		t.Error("the listener still accepts connections after Serve returned")
	}
}

// TestServeListenerError: a listener that fails makes Serve return its error.
func TestServeListenerError(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lis.Close()
	if err := sdk.Serve(context.Background(), lis, &sdk.Server{}); err == nil {
		t.Error("Serve on a closed listener returned nil")
	}
}
