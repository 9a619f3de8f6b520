package xdsserver

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Hostile clients: a client holding what an Envoy needs to connect may
// send anything. What it says must stay bounded, and may reach an
// object's status only about what its own stream was sent.

func quietServer() *Server { return New(slog.New(slog.NewTextHandler(io.Discard, nil))) }

// sotwStream opens a raw state-of-the-world stream.
func sotwStream(t *testing.T, ads discoveryv3.AggregatedDiscoveryServiceClient) discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesClient {
	t.Helper()
	st, err := ads.StreamAggregatedResources(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// refused waits for the stream to end and returns its status.
func refused(t *testing.T, st discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesClient) *status.Status {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		for {
			if _, err := st.Recv(); err != nil {
				done <- err
				return
			}
		}
	}()
	select {
	case err := <-done:
		return status.Convert(err)
	case <-time.After(5 * time.Second):
		t.Fatal("the stream was not refused within 5 s")
		return nil
	}
}

// eventually polls cond for up to 5 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal(what)
}

func TestUnknownTypeURLIsRefused(t *testing.T) {
	s := quietServer()
	update(t, s, routed(t, "a.example.com", "r"))
	st := sotwStream(t, serve(t, s))
	if err := st.Send(&discoveryv3.DiscoveryRequest{TypeUrl: "type.googleapis.com/made.up.Type0001",
		ErrorDetail: &rpcstatus.Status{Message: "x"}}); err != nil {
		t.Fatal(err)
	}
	got := refused(t, st)
	if got.Code() != codes.InvalidArgument || !strings.Contains(got.Message(), "made.up.Type0001") {
		t.Errorf("refusal = %v, want InvalidArgument naming the type URL", got)
	}
	if n := len(s.Rejections()); n != 0 {
		t.Errorf("%d rejections kept of an unknown type", n)
	}
}

// TestForgedRejectionIsNotAttributed: a NACK of a response the stream was
// never sent (a made-up nonce), naming another tenant's route
// configuration, reaches no resource.
func TestForgedRejectionIsNotAttributed(t *testing.T) {
	s := quietServer()
	update(t, s, routed(t, "tls0.example.com", "https/tls0.example.com", "https/tls1.example.com"))
	st := sotwStream(t, serve(t, s))
	for _, nonce := range []string{"", "1", "forged"} {
		if err := st.Send(&discoveryv3.DiscoveryRequest{TypeUrl: resourcev3.RouteType, ResponseNonce: nonce, VersionInfo: "1",
			ErrorDetail: &rpcstatus.Status{Message: "route https/tls0.example.com: you have been hacked"}}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(200 * time.Millisecond)
	for _, r := range s.Rejections() {
		if len(r.Resources) > 0 {
			t.Errorf("a forged NACK was attributed: %+v", r)
		}
	}
}

// TestRejectionNeedsTheResourceSent: a stream sent one route
// configuration cannot reject another one.
func TestRejectionNeedsTheResourceSent(t *testing.T) {
	s := quietServer()
	update(t, s, routed(t, "tls0.example.com", "https/tls0.example.com", "https/tls1.example.com"))
	c := connect(t, s, false)
	c.subscribe(resourcev3.RouteType, "https/tls1.example.com")
	m := c.next()
	if err := c.sotw.Send(&discoveryv3.DiscoveryRequest{TypeUrl: resourcev3.RouteType, ResourceNames: []string{"https/tls1.example.com"},
		ResponseNonce: m.nonce, ErrorDetail: &rpcstatus.Status{Message: "route https/tls0.example.com: forged"}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	for _, r := range s.Rejections() {
		for _, n := range r.Resources {
			if n == "https/tls0.example.com" {
				t.Errorf("rejection of a resource the stream was not sent: %+v", r)
			}
		}
	}
}

// TestRejectionEndsWithItsStream: what a stream rejected is forgotten
// when it closes.
func TestRejectionEndsWithItsStream(t *testing.T) {
	s := quietServer()
	update(t, s, switched(t, "a"))
	ads := serve(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	st, err := ads.StreamAggregatedResources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&discoveryv3.DiscoveryRequest{TypeUrl: resourcev3.ClusterType}); err != nil {
		t.Fatal(err)
	}
	r := recv(t, st)
	if err := st.Send(&discoveryv3.DiscoveryRequest{TypeUrl: resourcev3.ClusterType, ResponseNonce: r.Nonce,
		ErrorDetail: &rpcstatus.Status{Message: "cluster a: bad"}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the NACK was not recorded", func() bool { return len(s.Rejections()) == 1 })
	cancel()
	eventually(t, "the rejection outlived its stream", func() bool { return len(s.Rejections()) == 0 })
}

// TestAnotherStreamsACKDoesNotClear: one Envoy's ACK says nothing of
// what another rejected; the rejecting stream's own ACK clears it.
func TestAnotherStreamsACKDoesNotClear(t *testing.T) {
	s := quietServer()
	update(t, s, switched(t, "a"))
	bad, good := connect(t, s, false), connect(t, s, false)
	bad.subscribe(resourcev3.ClusterType)
	good.subscribe(resourcev3.ClusterType)
	m := bad.next()
	if err := bad.sotw.Send(&discoveryv3.DiscoveryRequest{TypeUrl: resourcev3.ClusterType, ResponseNonce: m.nonce,
		ErrorDetail: &rpcstatus.Status{Message: "cluster a: bad"}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the NACK was not recorded", func() bool { return len(s.Rejections()) == 1 })
	good.expect("cluster.v3.Cluster [a] removed []")
	time.Sleep(100 * time.Millisecond)
	if len(s.Rejections()) != 1 {
		t.Fatal("another stream's ACK cleared the rejection")
	}
	update(t, s, switched(t, "a", "b"))
	bad.expect("cluster.v3.Cluster [a b] removed []")
	eventually(t, "the stream's own ACK did not clear its rejection", func() bool { return len(s.Rejections()) == 0 })
}
