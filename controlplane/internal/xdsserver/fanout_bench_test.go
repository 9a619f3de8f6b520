package xdsserver

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/portcullis/portcullis/controlplane/internal/translator"
)

// BenchmarkSotWRouteChange times one route configuration's change among
// 10,001 until 100 state-of-the-world streams, each subscribed to all of
// them, have ACKed it: the ACKs repeat the 10,001 names, which is what
// the control plane reads most of when a change reaches a fleet (clients
// and server share the process, so the figure is both sides' work).
func BenchmarkSotWRouteChange(b *testing.B) {
	const streams, routes = 100, 10_001
	names := make([]string, routes)
	for i := range names {
		names[i] = fmt.Sprintf("https/host-%05d.bench.example.com", i)
	}
	res := routed(b, "v1.example.com", names...)
	s := New(slog.New(slog.NewTextHandler(io.Discard, nil)))
	if _, err := s.Update(context.Background(), res); err != nil {
		b.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = s.Serve(ctx, lis, nil) }()

	acked := make(chan string, streams)
	for range streams {
		st := openRoutes(b, ctx, lis.Addr().String(), names)
		go func() {
			for {
				r, err := st.Recv()
				if err != nil {
					return
				}
				if err := st.Send(&discoveryv3.DiscoveryRequest{TypeUrl: resourcev3.RouteType, ResourceNames: names,
					VersionInfo: r.VersionInfo, ResponseNonce: r.Nonce}); err != nil {
					return
				}
				acked <- r.VersionInfo
			}
		}()
	}
	wait := func(version string) {
		for n := 0; n < streams; {
			if <-acked == version || version == "" {
				n++
			}
		}
	}
	wait("") // every stream's first configuration

	b.ResetTimer()
	for i := range b.N {
		next := &translator.Resources{Listeners: res.Listeners, Routes: append([]proto.Message(nil), res.Routes...)}
		next.Routes[i%routes] = &routev3.RouteConfiguration{Name: names[i%routes],
			VirtualHosts: []*routev3.VirtualHost{{Name: fmt.Sprint(i), Domains: []string{"*"}}}}
		v, err := s.Update(context.Background(), next)
		if err != nil {
			b.Fatal(err)
		}
		wait(v)
	}
}

// openRoutes opens a state-of-the-world stream to addr on a connection of
// its own (closed with tb) and subscribes it to the route configurations
// names.
func openRoutes(tb testing.TB, ctx context.Context, addr string, names []string) discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesClient {
	tb.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(1<<30)))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.Close() })
	st, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	if err := st.Send(&discoveryv3.DiscoveryRequest{TypeUrl: resourcev3.RouteType, ResourceNames: names}); err != nil {
		tb.Fatal(err)
	}
	return st
}
