package xdsserver

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/portcullis/portcullis/controlplane/internal/translator"
)

// switched is routed's configuration with clusters, its route
// configuration "r" sending to the first one.
func switched(t *testing.T, clusters ...string) *translator.Resources {
	t.Helper()
	r := routed(t, "a.example.com", "r")
	r.Routes[0].(*routev3.RouteConfiguration).VirtualHosts[0].Routes = []*routev3.Route{{
		Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
		Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: clusters[0]}}},
	}}
	for _, c := range clusters {
		r.Clusters = append(r.Clusters, &clusterv3.Cluster{Name: c, ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC}})
	}
	return r
}

func update(t *testing.T, s *Server, r *translator.Resources) {
	t.Helper()
	if _, err := s.Update(context.Background(), r); err != nil {
		t.Fatal(err)
	}
}

// message is a response of either protocol, as a test reads it.
type message struct {
	typeURL, nonce, version string
	names, removed          []string
}

func (m message) String() string {
	return fmt.Sprintf("%s %v removed %v", m.typeURL[len("type.googleapis.com/envoy.config."):], m.names, m.removed)
}

// client is an ADS stream of either protocol: it subscribes, reads
// responses and answers them.
type client struct {
	t     *testing.T
	delta bool
	sotw  discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesClient
	dst   discoveryv3.AggregatedDiscoveryService_DeltaAggregatedResourcesClient
	// subs are the state-of-the-world subscriptions, repeated in ACKs.
	subs map[string][]string
	got  chan message
}

func connect(t *testing.T, s *Server, delta bool) *client {
	t.Helper()
	ads := serve(t, s)
	c := &client{t: t, delta: delta, subs: map[string][]string{}}
	var err error
	if delta {
		c.dst, err = ads.DeltaAggregatedResources(context.Background())
	} else {
		c.sotw, err = ads.StreamAggregatedResources(context.Background())
	}
	if err != nil {
		t.Fatal(err)
	}
	c.got = make(chan message, 16)
	go c.read()
	return c
}

func (c *client) subscribe(typeURL string, names ...string) {
	c.t.Helper()
	var err error
	if c.delta {
		err = c.dst.Send(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: typeURL, ResourceNamesSubscribe: names})
	} else {
		c.subs[typeURL] = names
		err = c.sotw.Send(&discoveryv3.DiscoveryRequest{TypeUrl: typeURL, ResourceNames: names})
	}
	if err != nil {
		c.t.Fatal(err)
	}
}

func (c *client) ack(m message) {
	c.t.Helper()
	var err error
	if c.delta {
		err = c.dst.Send(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: m.typeURL, ResponseNonce: m.nonce})
	} else {
		err = c.sotw.Send(&discoveryv3.DiscoveryRequest{TypeUrl: m.typeURL, ResourceNames: c.subs[m.typeURL], VersionInfo: m.version, ResponseNonce: m.nonce})
	}
	if err != nil {
		c.t.Fatal(err)
	}
}

// read reads every response of the stream into c.got.
func (c *client) read() {
	for {
		var m message
		if c.delta {
			r, err := c.dst.Recv()
			if err != nil {
				close(c.got)
				return
			}
			m = message{typeURL: r.TypeUrl, nonce: r.Nonce, version: r.SystemVersionInfo, removed: r.RemovedResources}
			for _, res := range r.Resources {
				m.names = append(m.names, res.Name)
			}
		} else {
			r, err := c.sotw.Recv()
			if err != nil {
				close(c.got)
				return
			}
			m = message{typeURL: r.TypeUrl, nonce: r.Nonce, version: r.VersionInfo}
			for _, a := range r.Resources {
				msg, err := a.UnmarshalNew()
				if err != nil {
					c.t.Error(err)
				}
				m.names = append(m.names, translator.ResourceName(msg))
			}
		}
		slices.Sort(m.names)
		c.got <- m
	}
}

// next returns the next response, within 5 s.
func (c *client) next() message {
	c.t.Helper()
	select {
	case m, ok := <-c.got:
		if !ok {
			c.t.Fatal("the stream ended")
		}
		return m
	case <-time.After(5 * time.Second):
		c.t.Fatal("no response within 5 s")
	}
	return message{}
}

// quiet checks that nothing comes within 200 ms.
func (c *client) quiet() {
	c.t.Helper()
	select {
	case m := <-c.got:
		c.t.Errorf("unexpected response %v", m)
	case <-time.After(200 * time.Millisecond):
	}
}

// expect reads a response, checks it and ACKs it.
func (c *client) expect(want string) message {
	c.t.Helper()
	m := c.next()
	if m.String() != want {
		c.t.Fatalf("response %q, want %q", m, want)
	}
	c.ack(m)
	return m
}

// TestMakeBeforeBreak: a route moving from cluster a to a new cluster b
// gets b first, then the route, and only then loses a, over both
// protocols (a state-of-the-world cluster response carries every
// cluster, so it keeps a until the second step).
func TestMakeBeforeBreak(t *testing.T) {
	for _, tc := range []struct {
		delta bool
		want  []string
	}{
		{false, []string{"cluster.v3.Cluster [a b c] removed []", "route.v3.RouteConfiguration [r] removed []", "cluster.v3.Cluster [b c] removed []"}},
		{true, []string{"cluster.v3.Cluster [b] removed []", "route.v3.RouteConfiguration [r] removed []", "cluster.v3.Cluster [] removed [a]"}},
	} {
		t.Run(fmt.Sprint("delta=", tc.delta), func(t *testing.T) {
			s := New(slog.New(slog.NewTextHandler(io.Discard, nil)))
			update(t, s, switched(t, "a", "c"))
			c := connect(t, s, tc.delta)
			c.subscribe(resourcev3.ClusterType)
			c.expect("cluster.v3.Cluster [a c] removed []")
			c.subscribe(resourcev3.RouteType, "r")
			c.expect("route.v3.RouteConfiguration [r] removed []")

			update(t, s, switched(t, "b", "c"))
			for _, w := range tc.want {
				c.expect(w)
			}
			c.quiet()
		})
	}
}

// TestFleetSharesSubscriptions: Envoys subscribing to the same names share
// one set of them; an ACK that repeats the names changes nothing, and the
// set goes with the last stream.
func TestFleetSharesSubscriptions(t *testing.T) {
	s := New(slog.New(slog.NewTextHandler(io.Discard, nil)))
	update(t, s, routed(t, "a.example.com", "a", "b", "c"))
	sets := func() (n, refs int) {
		s.sets.mu.Lock()
		defer s.sets.mu.Unlock()
		for _, set := range s.sets.byKey {
			n++
			refs += set.refs
		}
		return n, refs
	}
	var clients []*client
	for i, delta := range []bool{false, true, false} {
		c := connect(t, s, delta)
		names := []string{"a", "b", "c"}
		if i == 2 {
			names = []string{"c", "a", "b"} // another order, the same set
		}
		c.subscribe(resourcev3.RouteType, names...)
		c.expect("route.v3.RouteConfiguration [a b c] removed []")
		clients = append(clients, c)
	}
	if n, refs := sets(); n != 1 || refs != 3 {
		t.Errorf("%d sets held %d times, want one held by the 3 streams", n, refs)
	}
	// Each got every route configuration: the table's response, encoded
	// once per protocol and shared.
	if routes := s.world.Load().tables[resourcev3.RouteType]; routes.sotw.b == nil || routes.delta.b == nil {
		t.Error("the responses of every route configuration were not the table's shared encodings")
	}
	clients[0].subscribe(resourcev3.RouteType, "a", "b")
	clients[0].quiet()
	if n, refs := sets(); n != 2 || refs != 3 {
		t.Errorf("after one stream dropped c: %d sets held %d times, want 2 and 3", n, refs)
	}
	clients[1].subscribe(resourcev3.RouteType, "d")
	clients[1].quiet() // d does not exist
	update(t, s, routed(t, "a.example.com", "a", "b", "c", "d"))
	// Only the stream subscribing to d gets it (the others learn of it
	// from their listeners first).
	clients[1].expect("route.v3.RouteConfiguration [d] removed []")
	clients[0].quiet()
	clients[2].quiet()
}

// TestDeltaReconnect: an Envoy reconnecting with the versions it has is
// sent what differs and told what is gone, not everything again.
func TestDeltaReconnect(t *testing.T) {
	s := New(slog.New(slog.NewTextHandler(io.Discard, nil)))
	update(t, s, routed(t, "a.example.com", "a", "b", "c"))
	have := s.world.Load().tables[resourcev3.RouteType].byName["a"].version
	c := connect(t, s, true)
	if err := c.dst.Send(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: resourcev3.RouteType, ResourceNamesSubscribe: []string{"a", "b", "c", "gone"},
		InitialResourceVersions: map[string]string{"a": have, "b": "old", "gone": "old"}}); err != nil {
		t.Fatal(err)
	}
	c.expect("route.v3.RouteConfiguration [b c] removed []")
	c.expect("route.v3.RouteConfiguration [] removed [gone]")
	c.quiet()
}

// TestStreamFarBehind: a stream that has not answered for more versions
// than are kept is sent what differs from the table it has, every
// resource that changed meanwhile and none other.
func TestStreamFarBehind(t *testing.T) {
	for _, delta := range []bool{false, true} {
		t.Run(fmt.Sprint("delta=", delta), func(t *testing.T) {
			s := New(slog.New(slog.NewTextHandler(io.Discard, nil)))
			names := []string{"a", "b", "c", "d"}
			update(t, s, routed(t, "v0.example.com", names...))
			c := connect(t, s, delta)
			c.subscribe(resourcev3.RouteType, names...)
			first := c.next()
			// keptVersions+4 changes, each of b or c, while the first
			// response is not answered.
			for i := range keptVersions + 4 {
				r := routed(t, "v0.example.com", names...)
				n := 1 + i%2
				r.Routes[n] = &routev3.RouteConfiguration{Name: names[n], VirtualHosts: []*routev3.VirtualHost{{Name: names[n], Domains: []string{fmt.Sprintf("v%d.example.com", i+1)}}}}
				update(t, s, r)
			}
			if _, ok := s.world.Load().tables[resourcev3.RouteType].touchedSince(1); ok {
				t.Fatal("the first table is still kept: the test does not test the full comparison")
			}
			c.ack(first)
			c.expect("route.v3.RouteConfiguration [b c] removed []")
			c.quiet()
		})
	}
}

// TestStaleAnswersAreIgnored: a state-of-the-world request answering an
// older response than the last is not an ACK of the last one.
func TestStaleAnswersAreIgnored(t *testing.T) {
	s := New(slog.New(slog.NewTextHandler(io.Discard, nil)))
	update(t, s, switched(t, "a"))
	c := connect(t, s, false)
	c.subscribe(resourcev3.ClusterType)
	first := c.next()
	c.ack(first)
	update(t, s, switched(t, "a", "b"))
	second := c.next()
	c.ack(first) // stale
	update(t, s, switched(t, "a", "b", "c"))
	c.quiet()
	c.ack(second)
	c.expect("cluster.v3.Cluster [a b c] removed []")
}

// TestRoutesWaitForWarmClusters: Envoy answers a response of clusters
// only once they are warm, when it has their endpoints: endpoints must not
// wait for that answer (they did once; Envoy's initial fetch timed out),
// and routes do, so that a route never reaches Envoy before the cluster
// it sends to can serve.
func TestRoutesWaitForWarmClusters(t *testing.T) {
	for _, delta := range []bool{false, true} {
		t.Run(fmt.Sprint("delta=", delta), func(t *testing.T) {
			s := New(slog.New(slog.NewTextHandler(io.Discard, nil)))
			update(t, s, switched(t, "a"))
			c := connect(t, s, delta)
			c.subscribe(resourcev3.ClusterType)
			c.expect("cluster.v3.Cluster [a] removed []")
			c.subscribe(resourcev3.RouteType, "r")
			c.expect("route.v3.RouteConfiguration [r] removed []")
			// The route moves to a new EDS cluster e.
			r := switched(t, "e", "a")
			r.Clusters[0] = &clusterv3.Cluster{Name: "e", ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS}}
			r.Endpoints = append(r.Endpoints, &endpointv3.ClusterLoadAssignment{ClusterName: "e"})
			update(t, s, r)
			clusters := c.next() // not answered: e is warming
			if !slices.Contains(clusters.names, "e") {
				t.Fatalf("clusters response %v without e", clusters)
			}
			c.subscribe(resourcev3.EndpointType, "e")
			c.expect("endpoint.v3.ClusterLoadAssignment [e] removed []")
			c.quiet() // no route yet
			c.ack(clusters)
			c.expect("route.v3.RouteConfiguration [r] removed []")
			c.quiet()
		})
	}
}

// TestDeltaSubscribesManyNames: an Envoy's first request names every
// route configuration (10,001 at 10,000 TLS hosts), some twice; each is
// subscribed once, the fingerprint is that of the set, and a later
// request unsubscribing some (twice too) leaves the rest.
func TestDeltaSubscribesManyNames(t *testing.T) {
	s := New(slog.New(slog.NewTextHandler(io.Discard, nil)))
	a := &adsStream{s: s, delta: true, types: map[string]*typeState{}}
	var names []string
	for i := range 10001 {
		names = append(names, fmt.Sprintf("https/h%d.example.com", i))
	}
	sub := append(slices.Clone(names), names[:100]...)
	if err := a.onDelta(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: resourcev3.RouteType, ResourceNamesSubscribe: sub}); err != nil {
		t.Fatal(err)
	}
	ts := a.types[resourcev3.RouteType]
	if len(ts.names.names) != len(names) || ts.names.key != fingerprintOf(names) || len(ts.fresh) != len(names) {
		t.Fatalf("subscribed %d names (fresh %d), want %d, with the fingerprint of the set", len(ts.names.names), len(ts.fresh), len(names))
	}
	unsub := append(slices.Clone(names[:5000]), names[:10]...)
	if err := a.onDelta(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: resourcev3.RouteType, ResourceNamesUnsubscribe: unsub}); err != nil {
		t.Fatal(err)
	}
	if len(ts.names.names) != len(names)-5000 || ts.names.key != fingerprintOf(names[5000:]) {
		t.Errorf("after unsubscribing 5,000: %d names, want %d, with the fingerprint of the rest", len(ts.names.names), len(names)-5000)
	}
}
