package controlplane

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"
	protoenc "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// The xDS type URLs a simulated Envoy subscribes to.
const (
	typeCluster  = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
	typeEndpoint = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
	typeListener = "type.googleapis.com/envoy.config.listener.v3.Listener"
	typeRoute    = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"
	typeSecret   = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret"
)

// tokenWatch is one change being timed: every client reports, once, how
// long after start it ACKed the first response carrying token.
type tokenWatch struct {
	token []byte
	start time.Time
	acked chan time.Duration
}

// adsClient is a simulated Envoy: one ADS stream (state of the world or
// delta) on a gRPC connection of its own, subscribing as Envoy does — CDS
// and LDS as wildcards, then EDS for the EDS clusters, RDS for the route
// configurations its listeners' HTTP connection managers name, SDS for the
// secrets its listeners and clusters name — and ACKing every response after
// decoding its resources (and each listener's HTTP connection manager).
type adsClient struct {
	id    string
	delta bool
	conn  *grpc.ClientConn

	watch atomic.Pointer[tokenWatch]
	seen  *tokenWatch // the watch already reported (receive goroutine only)

	mu      sync.Mutex
	ready   bool
	readyCh chan struct{}
	err     error

	// Receive-goroutine state.
	subscribed map[string][]string        // type -> subscribed names (EDS, RDS, SDS)
	got        map[string]map[string]bool // type -> names received at least once
	acked      map[string]bool            // type -> ACKed at least once
	version    map[string]string          // SotW: type -> last version
	nonce      map[string]string          // SotW: type -> last nonce
	clusters   map[string]deps            // cluster -> what it names
	listeners  map[string]deps            // listener -> what it names
	decoded    atomic.Int64               // bytes of resources decoded
	synced     bool                       // checkReady found everything received
}

// deps are the resources a cluster or listener names.
type deps struct{ eds, rds, sds []string }

func newADSClient(id string, delta bool) *adsClient {
	return &adsClient{
		id: id, delta: delta, readyCh: make(chan struct{}),
		subscribed: map[string][]string{}, got: map[string]map[string]bool{}, acked: map[string]bool{},
		version: map[string]string{}, nonce: map[string]string{},
		clusters: map[string]deps{}, listeners: map[string]deps{},
	}
}

// run connects to addr and serves the stream until ctx ends or it fails.
func (c *adsClient) run(ctx context.Context, addr string) {
	err := c.serve(ctx, addr)
	if ctx.Err() == nil {
		c.mu.Lock()
		c.err = err
		if !c.ready {
			close(c.readyCh) // wake waiters: they read err
			c.ready = true
		}
		c.mu.Unlock()
	}
}

// streamErr is the status a stream ended with: a Send that fails because
// the server ended the stream returns io.EOF, and the status is Recv's.
func streamErr(err error, recv func() error) error {
	if errors.Is(err, io.EOF) {
		if rerr := recv(); rerr != nil {
			return fmt.Errorf("stream ended by the server: %w", rerr)
		}
	}
	return err
}

func (c *adsClient) serve(ctx context.Context, addr string) error {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(1<<30), grpc.MaxCallSendMsgSize(1<<30),
			grpc.ForceCodecV2(&namesCodec{std: encoding.GetCodecV2(protoenc.Name)})))
	if err != nil {
		return err
	}
	c.conn = conn
	defer conn.Close()
	ads := discoveryv3.NewAggregatedDiscoveryServiceClient(conn)
	node := &corev3.Node{Id: c.id, Cluster: "fanout"}
	if c.delta {
		s, err := ads.DeltaAggregatedResources(ctx)
		if err != nil {
			return err
		}
		return streamErr(c.serveDelta(s, node), func() error { _, err := s.Recv(); return err })
	}
	s, err := ads.StreamAggregatedResources(ctx)
	if err != nil {
		return err
	}
	return streamErr(c.serveSotW(s, node), func() error { _, err := s.Recv(); return err })
}

func (c *adsClient) serveSotW(s discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesClient, node *corev3.Node) error {
	for _, t := range []string{typeCluster, typeListener} {
		if err := s.Send(&discoveryv3.DiscoveryRequest{Node: node, TypeUrl: t}); err != nil {
			return err
		}
	}
	for {
		resp, err := s.Recv()
		if err != nil {
			return err
		}
		t := resp.TypeUrl
		carries, err := c.decode(t, resp.Resources, nil, true)
		if err != nil {
			return err
		}
		c.version[t], c.nonce[t] = resp.VersionInfo, resp.Nonce
		if err := s.Send(&discoveryv3.DiscoveryRequest{Node: node, TypeUrl: t, VersionInfo: resp.VersionInfo,
			ResponseNonce: resp.Nonce, ResourceNames: c.subscribed[t]}); err != nil {
			return err
		}
		c.acked[t] = true
		c.report(carries)
		for _, dt := range c.dependents(t) {
			want := c.wanted(dt)
			if slices.Equal(want, c.subscribed[dt]) {
				continue
			}
			c.subscribed[dt] = want
			if err := s.Send(&discoveryv3.DiscoveryRequest{Node: node, TypeUrl: dt, VersionInfo: c.version[dt],
				ResponseNonce: c.nonce[dt], ResourceNames: want}); err != nil {
				return err
			}
		}
		c.checkReady()
	}
}

func (c *adsClient) serveDelta(s discoveryv3.AggregatedDiscoveryService_DeltaAggregatedResourcesClient, node *corev3.Node) error {
	for _, t := range []string{typeCluster, typeListener} {
		if err := s.Send(&discoveryv3.DeltaDiscoveryRequest{Node: node, TypeUrl: t}); err != nil {
			return err
		}
	}
	for {
		resp, err := s.Recv()
		if err != nil {
			return err
		}
		t := resp.TypeUrl
		anys := make([]*anypb.Any, 0, len(resp.Resources))
		for _, r := range resp.Resources {
			anys = append(anys, r.Resource)
		}
		carries, err := c.decode(t, anys, resp.RemovedResources, false)
		if err != nil {
			return err
		}
		if err := s.Send(&discoveryv3.DeltaDiscoveryRequest{Node: node, TypeUrl: t, ResponseNonce: resp.Nonce}); err != nil {
			return err
		}
		c.acked[t] = true
		c.report(carries)
		for _, dt := range c.dependents(t) {
			want := c.wanted(dt)
			sub, unsub := diff(want, c.subscribed[dt])
			if len(sub) == 0 && len(unsub) == 0 {
				continue
			}
			c.subscribed[dt] = want
			if err := s.Send(&discoveryv3.DeltaDiscoveryRequest{Node: node, TypeUrl: dt,
				ResourceNamesSubscribe: sub, ResourceNamesUnsubscribe: unsub}); err != nil {
				return err
			}
		}
		c.checkReady()
	}
}

// decode unmarshals every resource of a response as Envoy would, records
// what clusters and listeners name, and reports whether a resource carries
// the token of the change being timed. fullState: the response has every
// cluster or listener (SotW CDS and LDS), not only changed ones.
func (c *adsClient) decode(t string, resources []*anypb.Any, removed []string, fullState bool) (bool, error) {
	w := c.watch.Load()
	carries := false
	if fullState && (t == typeCluster || t == typeListener) {
		if t == typeCluster {
			clear(c.clusters)
		} else {
			clear(c.listeners)
		}
	}
	for _, n := range removed {
		delete(c.clusters, n)
		delete(c.listeners, n)
	}
	if c.got[t] == nil {
		c.got[t] = map[string]bool{}
	}
	for _, a := range resources {
		c.decoded.Add(int64(len(a.Value)))
		if w != nil && w != c.seen && !carries && bytes.Contains(a.Value, w.token) {
			carries = true
		}
		switch t {
		case typeCluster:
			var cl clusterv3.Cluster
			if err := proto.Unmarshal(a.Value, &cl); err != nil {
				return false, fmt.Errorf("cluster: %w", err)
			}
			c.clusters[cl.Name] = clusterDeps(&cl)
			c.got[t][cl.Name] = true
		case typeListener:
			var l listenerv3.Listener
			if err := proto.Unmarshal(a.Value, &l); err != nil {
				return false, fmt.Errorf("listener: %w", err)
			}
			d, err := listenerDeps(&l)
			if err != nil {
				return false, err
			}
			c.listeners[l.Name] = d
			c.got[t][l.Name] = true
		case typeRoute:
			var r routev3.RouteConfiguration
			if err := proto.Unmarshal(a.Value, &r); err != nil {
				return false, fmt.Errorf("route configuration: %w", err)
			}
			c.got[t][r.Name] = true
		case typeEndpoint:
			var e endpointv3.ClusterLoadAssignment
			if err := proto.Unmarshal(a.Value, &e); err != nil {
				return false, fmt.Errorf("endpoints: %w", err)
			}
			c.got[t][e.ClusterName] = true
		case typeSecret:
			var s tlsv3.Secret
			if err := proto.Unmarshal(a.Value, &s); err != nil {
				return false, fmt.Errorf("secret: %w", err)
			}
			c.got[t][s.Name] = true
		default:
			return false, fmt.Errorf("unexpected type %s", t)
		}
	}
	return carries, nil
}

// report tells the change being timed that this client has ACKed it.
func (c *adsClient) report(carries bool) {
	if !carries {
		return
	}
	w := c.watch.Load()
	c.seen = w
	w.acked <- time.Since(w.start)
}

// dependents are the types whose subscriptions a response of type t can
// change: what clusters and listeners name.
func (c *adsClient) dependents(t string) []string {
	switch t {
	case typeCluster, typeListener:
		return []string{typeEndpoint, typeRoute, typeSecret}
	}
	return nil
}

// diff returns the names of want not in have and those of have not in
// want, both sorted.
func diff(want, have []string) (added, removed []string) {
	i, j := 0, 0
	for i < len(want) || j < len(have) {
		switch {
		case j == len(have) || i < len(want) && want[i] < have[j]:
			added = append(added, want[i])
			i++
		case i == len(want) || have[j] < want[i]:
			removed = append(removed, have[j])
			j++
		default:
			i++
			j++
		}
	}
	return added, removed
}

// wanted are the names of type t the clusters and listeners name, sorted.
func (c *adsClient) wanted(t string) []string {
	set := map[string]bool{}
	for _, m := range []map[string]deps{c.clusters, c.listeners} {
		for _, d := range m {
			var names []string
			switch t {
			case typeEndpoint:
				names = d.eds
			case typeRoute:
				names = d.rds
			case typeSecret:
				names = d.sds
			}
			for _, n := range names {
				set[n] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// checkReady marks the client ready once it has ACKed clusters and
// listeners and received every endpoint, route configuration and secret
// they name.
func (c *adsClient) checkReady() {
	if c.synced || !c.acked[typeCluster] || !c.acked[typeListener] {
		return
	}
	for _, t := range []string{typeEndpoint, typeRoute, typeSecret} {
		for _, n := range c.subscribed[t] {
			if !c.got[t][n] {
				return
			}
		}
	}
	c.synced = true
	c.mu.Lock()
	if !c.ready {
		c.ready = true
		close(c.readyCh)
	}
	c.mu.Unlock()
}

func (c *adsClient) failed() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func clusterDeps(cl *clusterv3.Cluster) deps {
	var d deps
	if cl.GetType() == clusterv3.Cluster_EDS {
		name := cl.GetEdsClusterConfig().GetServiceName()
		if name == "" {
			name = cl.Name
		}
		d.eds = []string{name}
	}
	if ts := cl.GetTransportSocket(); ts != nil {
		var up tlsv3.UpstreamTlsContext
		if ts.GetTypedConfig().MessageIs(&up) && ts.GetTypedConfig().UnmarshalTo(&up) == nil {
			d.sds = sdsNames(up.GetCommonTlsContext())
		}
	}
	return d
}

func listenerDeps(l *listenerv3.Listener) (deps, error) {
	var d deps
	chains := slices.Clone(l.FilterChains)
	if l.DefaultFilterChain != nil {
		chains = append(chains, l.DefaultFilterChain)
	}
	for _, fc := range chains {
		if ts := fc.GetTransportSocket(); ts != nil {
			var down tlsv3.DownstreamTlsContext
			if err := ts.GetTypedConfig().UnmarshalTo(&down); err != nil {
				return d, fmt.Errorf("listener %s: transport socket: %w", l.Name, err)
			}
			d.sds = append(d.sds, sdsNames(down.GetCommonTlsContext())...)
		}
		for _, f := range fc.Filters {
			var hcm hcmv3.HttpConnectionManager
			if !f.GetTypedConfig().MessageIs(&hcm) {
				continue
			}
			if err := f.GetTypedConfig().UnmarshalTo(&hcm); err != nil {
				return d, fmt.Errorf("listener %s: %w", l.Name, err)
			}
			if rds := hcm.GetRds(); rds != nil {
				d.rds = append(d.rds, rds.RouteConfigName)
			}
		}
	}
	return d, nil
}

func sdsNames(ctc *tlsv3.CommonTlsContext) []string {
	var out []string
	for _, s := range ctc.GetTlsCertificateSdsSecretConfigs() {
		out = append(out, s.Name)
	}
	if v := ctc.GetValidationContextSdsSecretConfig(); v != nil {
		out = append(out, v.Name)
	}
	if v := ctc.GetCombinedValidationContext().GetValidationContextSdsSecretConfig(); v != nil {
		out = append(out, v.Name)
	}
	return out
}

// namesCodec encodes a state-of-the-world request's resource names once
// per list: a simulated Envoy ACKs with the same list of names (10,001
// route configurations at 10,000 TLS roots) until its subscription
// changes, and encoding it on every ACK was most of the CPU the clients
// took from the two cores they share with the control plane, which a
// real fleet spends on machines of its own. The bytes sent are the same
// fields (the names last); the control plane still reads them all. A list
// is known by its slice: the client replaces a subscription's slice when
// it changes, never edits it in place.
type namesCodec struct {
	std  encoding.CodecV2
	mu   sync.Mutex
	last map[string]encodedNames // by type URL
}

type encodedNames struct {
	names []string // the list encoded (the same slice, not a copy)
	b     []byte
}

func (c *namesCodec) Name() string { return c.std.Name() }

func (c *namesCodec) Unmarshal(data mem.BufferSlice, v any) error { return c.std.Unmarshal(data, v) }

func (c *namesCodec) Marshal(v any) (mem.BufferSlice, error) {
	r, ok := v.(*discoveryv3.DiscoveryRequest)
	if !ok || len(r.ResourceNames) == 0 {
		return c.std.Marshal(v)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.last[r.TypeUrl]
	if len(e.names) != len(r.ResourceNames) || unsafe.SliceData(e.names) != unsafe.SliceData(r.ResourceNames) {
		e = encodedNames{names: r.ResourceNames}
		for _, n := range r.ResourceNames {
			e.b = protowire.AppendString(protowire.AppendTag(e.b, 3, protowire.BytesType), n)
		}
		if c.last == nil {
			c.last = map[string]encodedNames{}
		}
		c.last[r.TypeUrl] = e
	}
	rest, err := proto.Marshal(&discoveryv3.DiscoveryRequest{VersionInfo: r.VersionInfo, Node: r.Node, TypeUrl: r.TypeUrl,
		ResponseNonce: r.ResponseNonce, ErrorDetail: r.ErrorDetail})
	if err != nil {
		return nil, err
	}
	return mem.BufferSlice{mem.SliceBuffer(rest), mem.SliceBuffer(e.b)}, nil
}
