package xdsserver

import (
	"context"
	"io"
	"log/slog"
	"net"
	"slices"
	"testing"
	"time"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/portcullis/portcullis/controlplane/internal/translator"
)

// routed is a listener naming route configurations routes, and those, each
// with one virtual host for domain.
func routed(t testing.TB, domain string, routes ...string) *translator.Resources {
	t.Helper()
	l := &listenerv3.Listener{Name: "ingress"}
	r := &translator.Resources{Listeners: []proto.Message{l}}
	for _, name := range routes {
		hcm, err := anypb.New(&hcmv3.HttpConnectionManager{StatPrefix: name, RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{
			Rds: &hcmv3.Rds{RouteConfigName: name}}})
		if err != nil {
			t.Fatal(err)
		}
		l.FilterChains = append(l.FilterChains, &listenerv3.FilterChain{Name: name, Filters: []*listenerv3.Filter{{
			Name: "envoy.filters.network.http_connection_manager", ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: hcm}}}})
		r.Routes = append(r.Routes, &routev3.RouteConfiguration{Name: name, VirtualHosts: []*routev3.VirtualHost{{Name: name, Domains: []string{domain}}}})
	}
	return r
}

// serve runs s on a loopback listener and returns an ADS client, on a
// connection of its own dialled with opts.
func serve(t *testing.T, s *Server, opts ...grpc.DialOption) discoveryv3.AggregatedDiscoveryServiceClient {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Serve(ctx, lis, nil) }()
	conn, err := grpc.NewClient(lis.Addr().String(), append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(); cancel(); <-done })
	return discoveryv3.NewAggregatedDiscoveryServiceClient(conn)
}

// recv waits up to 5 s for a response.
func recv(t *testing.T, st discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesClient) *discoveryv3.DiscoveryResponse {
	t.Helper()
	got := make(chan *discoveryv3.DiscoveryResponse, 1)
	go func() {
		r, err := st.Recv()
		if err != nil {
			t.Error(err)
		}
		got <- r
	}()
	select {
	case r := <-got:
		return r
	case <-time.After(5 * time.Second):
		t.Fatal("no response within 5 s")
		return nil
	}
}

func names(t *testing.T, r *discoveryv3.DiscoveryResponse) []string {
	t.Helper()
	var out []string
	for _, a := range r.Resources {
		var rc routev3.RouteConfiguration
		if err := a.UnmarshalTo(&rc); err != nil {
			t.Fatal(err)
		}
		out = append(out, rc.Name)
	}
	slices.Sort(out)
	return out
}

// TestNothingIsSentBeforeTheFirstConfiguration: an Envoy that connects
// before the first build (a control plane just restarted) gets no
// response, so keeps its configuration, and gets the first one once
// published.
func TestNothingIsSentBeforeTheFirstConfiguration(t *testing.T) {
	s := New(slog.New(slog.NewTextHandler(io.Discard, nil)))
	ads := serve(t, s)
	st, err := ads.StreamAggregatedResources(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&discoveryv3.DiscoveryRequest{TypeUrl: resourcev3.ListenerType}); err != nil {
		t.Fatal(err)
	}
	early := make(chan *discoveryv3.DiscoveryResponse, 1)
	go func() {
		if r, err := st.Recv(); err == nil {
			early <- r
		}
	}()
	select {
	case r := <-early:
		t.Fatalf("a response before any configuration: %v", r)
	case <-time.After(300 * time.Millisecond):
	}
	if _, err := s.Update(context.Background(), routed(t, "a.example.com", "a")); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-early:
		if len(r.Resources) != 1 {
			t.Errorf("first response has %d listeners, want 1", len(r.Resources))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no response after the first configuration")
	}
}

// TestStateOfTheWorldSendsChangedRoutesOnly: a change to one route
// configuration sends that one, not every route configuration the Envoy
// subscribes to (the protocol asks the whole set only for listeners and
// clusters); each response's version is the one remembered for NACKs.
func TestStateOfTheWorldSendsChangedRoutesOnly(t *testing.T) {
	s := New(slog.New(slog.NewTextHandler(io.Discard, nil)))
	ads := serve(t, s)
	if _, err := s.Update(context.Background(), routed(t, "v1.example.com", "a", "b", "c")); err != nil {
		t.Fatal(err)
	}
	st, err := ads.StreamAggregatedResources(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	all := []string{"a", "b", "c"}
	if err := st.Send(&discoveryv3.DiscoveryRequest{TypeUrl: resourcev3.RouteType, ResourceNames: all}); err != nil {
		t.Fatal(err)
	}
	first := recv(t, st)
	if got := names(t, first); !slices.Equal(got, all) {
		t.Fatalf("first response has %v, want %v", got, all)
	}
	if err := st.Send(&discoveryv3.DiscoveryRequest{TypeUrl: resourcev3.RouteType, ResourceNames: all,
		VersionInfo: first.VersionInfo, ResponseNonce: first.Nonce}); err != nil {
		t.Fatal(err)
	}
	// b changes alone.
	next := routed(t, "v1.example.com", "a", "b", "c")
	next.Routes[1] = &routev3.RouteConfiguration{Name: "b", VirtualHosts: []*routev3.VirtualHost{{Name: "b", Domains: []string{"v2.example.com"}}}}
	if _, err := s.Update(context.Background(), next); err != nil {
		t.Fatal(err)
	}
	second := recv(t, st)
	if got := names(t, second); !slices.Equal(got, []string{"b"}) {
		t.Errorf("the change sent %v, want only [b]", got)
	}
	if second.VersionInfo == first.VersionInfo {
		t.Errorf("the change kept version %s", first.VersionInfo)
	}
	// A NACK of it names b and the versions.
	if err := st.Send(&discoveryv3.DiscoveryRequest{TypeUrl: resourcev3.RouteType, ResourceNames: all, VersionInfo: first.VersionInfo,
		ResponseNonce: second.Nonce, ErrorDetail: &status.Status{Message: "route configuration b: bad"}}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(s.Rejections()) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	rej := s.Rejections()
	if len(rej) != 1 || rej[0].Version != second.VersionInfo || rej[0].Accepted != first.VersionInfo || !slices.Equal(rej[0].Resources, []string{"b"}) {
		t.Errorf("rejections = %+v, want b rejected in %s, %s kept", rej, second.VersionInfo, first.VersionInfo)
	}
}

// TestNoncesAreTheStreams: go-control-plane counts nonces per stream, so
// two Envoys send the same nonces for different responses; a NACK is
// attributed to what its own stream was sent.
func TestNoncesAreTheStreams(t *testing.T) {
	s := New(slog.New(slog.NewTextHandler(io.Discard, nil)))
	s.onResponse(1, &discoveryv3.DiscoveryResponse{TypeUrl: resourcev3.ClusterType, VersionInfo: "5", Nonce: "1"}, nil, nil, false)
	s.onResponse(2, &discoveryv3.DiscoveryResponse{TypeUrl: resourcev3.ClusterType, VersionInfo: "6", Nonce: "1"}, nil, nil, false)
	nack(s, "4", "1", "bad")
	if r := s.Rejections(); len(r) != 1 || r[0].Version != "5" {
		t.Errorf("rejections = %+v, want version 5 (stream 1's response) rejected", r)
	}
}

// TestDeltaSendsChangedRoutesOnly: a delta stream (served from the
// snapshot cache) gets the route configurations it subscribes to, then
// only the one that changed.
func TestDeltaSendsChangedRoutesOnly(t *testing.T) {
	s := New(slog.New(slog.NewTextHandler(io.Discard, nil)))
	ads := serve(t, s)
	if _, err := s.Update(context.Background(), routed(t, "v1.example.com", "a", "b", "c")); err != nil {
		t.Fatal(err)
	}
	st, err := ads.DeltaAggregatedResources(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: resourcev3.RouteType, ResourceNamesSubscribe: []string{"a", "b", "c"}}); err != nil {
		t.Fatal(err)
	}
	recvNames := func() (*discoveryv3.DeltaDiscoveryResponse, []string) {
		t.Helper()
		got := make(chan *discoveryv3.DeltaDiscoveryResponse, 1)
		go func() {
			r, err := st.Recv()
			if err != nil {
				t.Error(err)
			}
			got <- r
		}()
		select {
		case r := <-got:
			var out []string
			for _, res := range r.GetResources() {
				out = append(out, res.Name)
			}
			slices.Sort(out)
			return r, out
		case <-time.After(5 * time.Second):
			t.Fatal("no response within 5 s")
			return nil, nil
		}
	}
	first, got := recvNames()
	if !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("first response has %v, want [a b c]", got)
	}
	if err := st.Send(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: resourcev3.RouteType, ResponseNonce: first.Nonce}); err != nil {
		t.Fatal(err)
	}
	next := routed(t, "v1.example.com", "a", "b", "c")
	next.Routes[1] = &routev3.RouteConfiguration{Name: "b", VirtualHosts: []*routev3.VirtualHost{{Name: "b", Domains: []string{"v2.example.com"}}}}
	if _, err := s.Update(context.Background(), next); err != nil {
		t.Fatal(err)
	}
	if _, got := recvNames(); !slices.Equal(got, []string{"b"}) {
		t.Errorf("the change sent %v, want only [b]", got)
	}
}
