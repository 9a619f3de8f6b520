package xdsserver

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
)

// BenchmarkLargeNACK times a NACK of 1 MB of text about 10,001 route
// configurations the stream was sent, until the server has taken it
// (OnRejection), and reports how long another stream waited meanwhile
// for the server's lock (max-blocked-ns: what every stream's response
// and request needs).
func BenchmarkLargeNACK(b *testing.B) {
	const routes = 10_001
	names := make([]string, routes)
	for i := range names {
		names[i] = fmt.Sprintf("https/host-%05d.bench.example.com", i)
	}
	s := New(slog.New(slog.NewTextHandler(io.Discard, nil)))
	if _, err := s.Update(context.Background(), routed(b, "v1.example.com", names...)); err != nil {
		b.Fatal(err)
	}
	taken := make(chan struct{}, 1)
	s.OnRejection = func(Rejection) { taken <- struct{}{} }
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = s.Serve(ctx, lis, nil) }()
	st := openRoutes(b, ctx, lis.Addr().String(), names)
	r, err := st.Recv()
	if err != nil {
		b.Fatal(err)
	}
	msg := strings.Repeat("something went wrong ", 1<<20/21)
	var maxBlocked atomic.Int64
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			t0 := time.Now()
			s.Connected() // takes the lock every stream needs
			if d := int64(time.Since(t0)); d > maxBlocked.Load() {
				maxBlocked.Store(d)
			}
			time.Sleep(time.Millisecond)
		}
	}()
	b.ResetTimer()
	for range b.N {
		if err := st.Send(&discoveryv3.DiscoveryRequest{TypeUrl: resourcev3.RouteType, ResourceNames: names, ResponseNonce: r.Nonce,
			ErrorDetail: &rpcstatus.Status{Message: msg}}); err != nil {
			b.Fatal(err)
		}
		<-taken
	}
	b.StopTimer()
	close(stop)
	b.ReportMetric(float64(maxBlocked.Load()), "max-blocked-ns")
}
