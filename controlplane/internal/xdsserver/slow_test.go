package xdsserver

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc"

	"github.com/portcullis/portcullis/controlplane/internal/translator"
)

// bigRouted is routed's configuration of route configurations "big" (2
// MB) and "small", big's virtual host named v: a response of big alone is
// not the table's (whose encoding is shared).
func bigRouted(t *testing.T, v string) *translator.Resources {
	t.Helper()
	r := routed(t, "a.example.com", "big", "small")
	vh := r.Routes[0].(*routev3.RouteConfiguration).VirtualHosts[0]
	vh.Name = v
	for i := range 2 << 20 / 20 {
		vh.Domains = append(vh.Domains, fmt.Sprintf("h%08d.example.com", i))
	}
	return r
}

// openHostile opens a stream that subscribes to big and then reads
// nothing and answers nothing; it returns the stream's context, done once
// the stream ends.
func openHostile(t *testing.T, s *Server, delta bool) context.Context {
	t.Helper()
	// A window of its own (no BDP estimation): what it does not read
	// stops the server's writes after 64 KB.
	ads := serve(t, s, grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10))
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if delta {
		st, err := ads.DeltaAggregatedResources(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Send(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: resourcev3.RouteType, ResourceNamesSubscribe: []string{"big"}}); err != nil {
			t.Fatal(err)
		}
		return st.Context()
	}
	st, err := ads.StreamAggregatedResources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&discoveryv3.DiscoveryRequest{TypeUrl: resourcev3.RouteType, ResourceNames: []string{"big"}}); err != nil {
		t.Fatal(err)
	}
	return st.Context()
}

// TestSlowClientsDoNotHoldBackTheFleet: 10 state-of-the-world and 10
// delta streams that subscribe to a large route configuration and then
// never read nor answer do not hold back a client that does: it is sent a
// change of it at once, over both protocols.
func TestSlowClientsDoNotHoldBackTheFleet(t *testing.T) {
	s := New(slog.New(slog.NewTextHandler(io.Discard, nil)))
	update(t, s, bigRouted(t, "v1"))
	for i := range 20 {
		openHostile(t, s, i%2 == 1)
	}
	time.Sleep(300 * time.Millisecond) // they are sent big
	fast := []*client{connect(t, s, false), connect(t, s, true)}
	for _, c := range fast {
		c.subscribe(resourcev3.RouteType, "big", "small")
		c.expect("route.v3.RouteConfiguration [big small] removed []")
	}
	update(t, s, bigRouted(t, "v2"))
	start := time.Now()
	for _, c := range fast {
		c.expect("route.v3.RouteConfiguration [big] removed []")
	}
	took := time.Since(start)
	t.Logf("a change reached both fast clients in %s", took)
	if took > 2*time.Second {
		t.Errorf("a change took %s to reach the fast clients; want < 2s", took)
	}
}

// TestSlowClientsAreDropped: with a client timeout, streams that do not
// answer what they are sent (state of the world and delta), and one that
// answers (blindly: its nonces are counted) but does not read, are dropped
// after it and counted; a client that reads and answers stays.
func TestSlowClientsAreDropped(t *testing.T) {
	s := New(slog.New(slog.NewTextHandler(io.Discard, nil)))
	s.ClientTimeout = 500 * time.Millisecond
	update(t, s, bigRouted(t, "v1"))
	fast := connect(t, s, true)
	fast.subscribe(resourcev3.RouteType, "big", "small")
	fast.expect("route.v3.RouteConfiguration [big small] removed []")
	openHostile(t, s, false)
	openHostile(t, s, true)
	// Answers its first response without reading it: the next one is
	// not read.
	ads := serve(t, s, grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10))
	st, err := ads.StreamAggregatedResources(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"big"}
	if err := st.Send(&discoveryv3.DiscoveryRequest{TypeUrl: resourcev3.RouteType, ResourceNames: names}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if err := st.Send(&discoveryv3.DiscoveryRequest{TypeUrl: resourcev3.RouteType, ResourceNames: names, VersionInfo: "1", ResponseNonce: "1"}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if unanswered, unread := s.Dropped(); unanswered+unread != 0 {
		t.Fatalf("%d streams dropped before the timeout", unanswered+unread)
	}
	start := time.Now()
	update(t, s, bigRouted(t, "v2"))
	fast.expect("route.v3.RouteConfiguration [big] removed []")
	for time.Since(start) < 5*time.Second {
		if unanswered, unread := s.Dropped(); unanswered == 2 && unread == 1 && s.Connected() == 1 {
			t.Logf("dropped in %s", time.Since(start))
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if unanswered, unread := s.Dropped(); unanswered != 2 || unread != 1 || s.Connected() != 1 {
		t.Fatalf("dropped %d unanswered and %d unread streams, %d connected; want 2, 1 and 1", unanswered, unread, s.Connected())
	}
	// The fast client stays, and is served.
	update(t, s, bigRouted(t, "v3"))
	fast.expect("route.v3.RouteConfiguration [big] removed []")
}
