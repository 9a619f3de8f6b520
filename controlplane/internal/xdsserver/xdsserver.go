// Package xdsserver serves Envoy resources over ADS (state of the world
// and delta) to a fleet of Envoys, and records what Envoy says back: an ADS NACK (a request carrying
// error_detail) means Envoy rejected configuration, which must be visible.
package xdsserver

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"golang.org/x/time/rate"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/portcullis/portcullis/controlplane/internal/translator"
)

// Rejection is a configuration Envoy refused.
type Rejection struct {
	TypeURL string `json:"typeUrl"`
	// Version is the rejected version; Envoy keeps Accepted.
	Version  string `json:"version"`
	Accepted string `json:"accepted,omitempty"`
	Node     string `json:"node"`
	Message  string `json:"message"`
	// Resources are the names of the resources Envoy rejected: those its
	// message names, else those that changed since the accepted version.
	Resources []string  `json:"resources,omitempty"`
	Time      time.Time `json:"time"`
}

// keptVersions is how many published versions of a type are kept: a
// stream behind by fewer learns what changed from their lists of touched
// names, and a NACK is told which resources it is about from their hashes.
const keptVersions = 16

// logRate and logBurst bound the NACKs logged, a second.
const logRate, logBurst = 10, 50

// keptNonces is how many responses of each type a stream remembers: a
// request answers the latest, or one just before it.
const keptNonces = 4

// DefaultClientTimeout is the default Server.ClientTimeout.
const DefaultClientTimeout = 2 * time.Minute

// publishOrder is the order in which a change reaches every Envoy:
// clusters before the endpoints and secrets they use and the listeners and
// routes that use them (make before break); removals go in the reverse
// order.
var publishOrder = []string{resourcev3.ClusterType, resourcev3.EndpointType, resourcev3.SecretType, resourcev3.ListenerType, resourcev3.RouteType}

// Server holds the published configuration and the ADS server.
type Server struct {
	log *slog.Logger
	// world is the configuration every Envoy is served; one with no tables
	// until the first Update.
	world atomic.Pointer[world]
	sets  nameSets
	// ClientTimeout is how long an xDS client may take to read a response
	// and to answer it (ACK or NACK): a stream that takes longer is
	// dropped (see adsStream). None when 0. Set before Serve.
	ClientTimeout time.Duration
	// dropped counts the streams dropped, by reason (dropUnanswered,
	// dropUnread).
	dropped [2]atomic.Uint64
	// conns are the connections Serve accepted, by remote address: a
	// dropped stream's is closed (see adsStream.drop).
	conns sync.Map
	// hashes remembers the hashing of each type by the last Update:
	// the translator reuses the messages of unchanged virtual hosts and
	// clusters (translator.Cache), which then need no marshalling, and
	// often a whole list. Messages are never modified once published.
	// Guarded by hashMu.
	hashMu sync.Mutex
	hashes map[string]*typeHash

	// Limits bound what a client can make the server do or keep; set
	// before Serve (New sets DefaultLimits).
	Limits   Limits
	refused  refusals
	logLimit *rate.Limiter

	mu       sync.Mutex
	checker  checker
	version  int
	lastHash string
	// kept counts the rejections the streams keep (Limits.MaxRejections).
	kept int
	// keptByType counts them by type (Limits.MaxRejectionsPerType).
	keptByType map[string]int
	acked      map[string]string // type URL -> last acknowledged version
	streams    map[int64]*stream
	// peerStreams counts the open streams of each peer (peerKey).
	peerStreams map[string]int
	// peers holds the client certificate of each stream over mTLS.
	peers map[int64]ClientCertificate
	// OnRejection, when set, is called for every NACK received (also
	// repeated ones, and those not kept), outside the lock; its type URL is
	// one the server serves and its message at most MaxMessage long.
	OnRejection func(Rejection)
	// OnChange, when set, is called when the set of rejected types changes
	// (a new rejection, or Envoy accepting a type again), outside the lock.
	OnChange func()
}

// stream is what the server remembers of one ADS stream. Nonces are
// counted per stream, so what a response carried is known by stream and
// nonce.
type stream struct {
	node string
	// sent holds, by type URL, the latest responses sent.
	sent map[string][]sentResponse
	// rejections are what the stream's Envoy rejects, by type URL.
	rejections map[string]Rejection
	// waiting holds, by type URL, when the oldest response the stream's
	// Envoy has not ACKed was sent (lag.go); absent when it ACKed the
	// latest.
	waiting map[string]time.Time
}

// sentResponse is what one response carried: its version, and the
// resources it added, changed or removed (until answered): names, or
// every resource of table when all.
type sentResponse struct {
	nonce, version string
	at             time.Time // when it was sent
	names          []string
	table          *table
	all            bool
}

// carried names the resources the response carried.
func (r *sentResponse) carried() []string {
	if r.all && r.table != nil {
		return slices.Collect(maps.Keys(r.table.byName))
	}
	return r.names
}

// New returns a server with an empty configuration.
func New(log *slog.Logger) *Server {
	s := &Server{
		log:           log,
		ClientTimeout: DefaultClientTimeout,
		Limits:        DefaultLimits,
		logLimit:      rate.NewLimiter(logRate, logBurst),
		acked:         map[string]string{},
		keptByType:    map[string]int{},
		streams:       map[int64]*stream{},
		peerStreams:   map[string]int{},
		peers:         map[int64]ClientCertificate{},
	}
	s.world.Store(&world{changed: make(chan struct{})})
	return s
}

// Update publishes a new set of resources; unchanged resources publish
// nothing. It returns the version in force.
func (s *Server) Update(ctx context.Context, r *translator.Resources) (string, error) {
	h, err := s.hash(r)
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if h.hash == s.lastHash {
		return fmt.Sprint(s.version), nil
	}
	items := map[string][]proto.Message{
		resourcev3.ListenerType: r.Listeners, resourcev3.RouteType: r.Routes, resourcev3.ClusterType: r.Clusters,
		resourcev3.EndpointType: r.Endpoints, resourcev3.SecretType: r.Secrets,
	}
	if err := s.checker.check(r, h.per[resourcev3.ListenerType]); err != nil {
		return "", err
	}
	old := s.world.Load()
	next := &world{tables: map[string]*table{}, changed: make(chan struct{})}
	for typeURL, list := range items {
		if t := old.tables[typeURL]; t != nil && slices.Equal(t.from, list) {
			// The same messages as published: nothing to look at.
			next.tables[typeURL] = t
			continue
		}
		t, err := nextTable(old.tables[typeURL], list, h.per[typeURL], h.encoded)
		if err != nil {
			return "", err
		}
		next.tables[typeURL] = t
	}
	s.world.Store(next)
	close(old.changed)
	s.version++
	s.lastHash = h.hash
	return fmt.Sprint(s.version), nil
}

// hash hashes the resources (hashResources), reusing and then keeping the
// hashes of the messages of the last Update.
func (s *Server) hash(r *translator.Resources) (hashed, error) {
	s.hashMu.Lock()
	defer s.hashMu.Unlock()
	h, err := hashResources(r, s.hashes)
	if err != nil {
		return hashed{}, err
	}
	s.hashes = h.types
	return h, nil
}

// nextTable is the table of a type after before: list, whose versions
// (hashes) by name are now. Only the resources whose hash changed are
// encoded and touched: the others are sent to nobody. A resource is
// encoded once: with its encoding in encoded (hashResources), else anew.
// before itself when nothing changed.
func nextTable(before *table, list []proto.Message, now map[string]string, encoded map[proto.Message][]byte) (*table, error) {
	update := map[string]*resource{}
	for _, m := range list {
		name := translator.ResourceName(m)
		if prev := before.lookup(name); prev != nil && prev.version == now[name] {
			continue
		}
		b, ok := encoded[m]
		if !ok {
			// Hashed by an Update that did not publish (an inconsistent set).
			var err error
			if b, err = deterministic.Marshal(m); err != nil {
				return nil, err
			}
		}
		a := &anypb.Any{TypeUrl: typeURLPrefix + string(m.ProtoReflect().Descriptor().FullName()), Value: b}
		update[name] = newResource(name, now[name], a)
	}
	var remove []string
	if before != nil {
		for name := range before.byName {
			if _, ok := now[name]; !ok {
				remove = append(remove, name)
			}
		}
	}
	if before != nil && len(update) == 0 && len(remove) == 0 {
		return before, nil
	}
	t := before.next(update, remove)
	t.from = list
	return t, nil
}

// deterministic is how resources are encoded, to hash them and to send
// them: equal messages give equal bytes.
var deterministic = proto.MarshalOptions{Deterministic: true}

// typeURLPrefix begins the type URL of an Any (as anypb.New writes it).
const typeURLPrefix = "type.googleapis.com/"

// hashed is what hashResources finds.
type hashed struct {
	// hash is the whole set's.
	hash string
	// per are the resources' versions, by type and name.
	per map[string]map[string]string
	// types are each type's hashing, for the next call.
	types map[string]*typeHash
	// encoded are the encodings made to hash the messages not known (new
	// ones): those that changed are sent as they are, not encoded again.
	encoded map[proto.Message][]byte
}

// typeHash is the hashing of one type's list: the list itself, each
// message's sum, the versions by name, and the digest of the sums in order.
type typeHash struct {
	list   []proto.Message
	sums   map[proto.Message]sum
	names  map[string]string
	digest [sha256.Size]byte
}

// hashResources hashes the whole set (to skip publishing an unchanged
// one) and each resource (to tell which ones a NACK is about, and as its
// delta xDS version). Marshalling every resource is a good part of a
// rebuild at scale, so the resources are hashed on every core, and a
// message already hashed by the last call (the same message: one the
// translator reused, never modified; last keeps it alive) is not hashed
// again. A type whose list is the last call's, message for message (the
// clusters and endpoints when one route changes), is not looked at again:
// work that grows with the unchanged part of a large configuration is
// what a change must not cost. The one cache still keyed by message
// (docs/design/caches.md).
func hashResources(r *translator.Resources, last map[string]*typeHash) (hashed, error) {
	lists := []struct {
		typeURL string
		list    []proto.Message
	}{
		{resourcev3.ListenerType, r.Listeners}, {resourcev3.RouteType, r.Routes}, {resourcev3.ClusterType, r.Clusters},
		{resourcev3.EndpointType, r.Endpoints}, {resourcev3.SecretType, r.Secrets},
	}
	out := hashed{per: map[string]map[string]string{}, types: map[string]*typeHash{}, encoded: map[proto.Message][]byte{}}
	h := sha256.New()
	for _, l := range lists {
		t := last[l.typeURL]
		if t == nil || !slices.Equal(t.list, l.list) {
			var known map[proto.Message]sum
			if t != nil {
				known = t.sums
			}
			var err error
			if t, err = hashList(l.list, known, r.Encoded, out.encoded); err != nil {
				return hashed{}, err
			}
		}
		out.types[l.typeURL], out.per[l.typeURL] = t, t.names
		h.Write(t.digest[:])
		h.Write([]byte{0})
	}
	out.hash = hex.EncodeToString(h.Sum(nil))
	return out, nil
}

// hashList hashes one type's list (hashEach), adding the encodings it
// made to encoded.
func hashList(list []proto.Message, known map[proto.Message]sum, translated, encoded map[proto.Message][]byte) (*typeHash, error) {
	sums, enc, err := hashEach(list, known, translated)
	if err != nil {
		return nil, err
	}
	t := &typeHash{list: list, sums: make(map[proto.Message]sum, len(list)), names: make(map[string]string, len(list))}
	d := sha256.New()
	for i, m := range list {
		t.sums[m] = sums[i]
		if enc[i] != nil {
			encoded[m] = enc[i]
		}
		d.Write(sums[i].sha[:])
		t.names[translator.ResourceName(m)] = sums[i].version
	}
	d.Sum(t.digest[:0])
	return t, nil
}

// sum is the SHA-256 of a resource's encoding, and its version: the
// hexadecimal of its first 12 bytes, kept with it so that a known message
// costs no string.
type sum struct {
	sha     [sha256.Size]byte
	version string
}

// hashEach returns the SHA-256 of each message's deterministic encoding,
// in order, computed by one worker per CPU, and the encodings; those in
// known are taken from it (and have no encoding), those in encoded (the
// translator's: Resources.Encoded) are not encoded again.
func hashEach(ms []proto.Message, known map[proto.Message]sum, encoded map[proto.Message][]byte) ([]sum, [][]byte, error) {
	sums, enc := make([]sum, len(ms)), make([][]byte, len(ms))
	workers := min(runtime.GOMAXPROCS(0), len(ms))
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(ms); i += workers {
				if sum, ok := known[ms[i]]; ok {
					sums[i] = sum
					continue
				}
				b, ok := encoded[ms[i]]
				if !ok {
					var err error
					if b, err = deterministic.Marshal(ms[i]); err != nil {
						errs[w] = err
						return
					}
				}
				sha := sha256.Sum256(b)
				sums[i], enc[i] = sum{sha: sha, version: hex.EncodeToString(sha[:12])}, b
			}
		}()
	}
	wg.Wait()
	return sums, enc, errors.Join(errs...)
}

// mentions reports whether message names a resource as a whole word
// (Envoy writes "cluster(s) NAME: error, NAME2: error"), so that a short
// name is not found inside another word.
func mentions(message, name string) bool {
	if name == "" {
		return false
	}
	for i := 0; ; {
		j := strings.Index(message[i:], name)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(name)
		if (start == 0 || !isNameByte(message[start-1])) && (end == len(message) || !isNameByte(message[end])) {
			return true
		}
		i = start + 1
	}
}

// isNameByte reports whether c can be part of a resource name, as mentions
// sees one.
func isNameByte(c byte) bool {
	return c == '/' || c == '.' || c == '-' || c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// Acked returns the last version Envoy acknowledged for each type.
func (s *Server) Acked() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]string{}
	for k, v := range s.acked {
		out[k] = v
	}
	return out
}

// Dropped returns how many streams were dropped because their client did
// not answer a response, and did not read one, within ClientTimeout.
func (s *Server) Dropped() (unanswered, unread uint64) {
	return s.dropped[dropUnanswered].Load(), s.dropped[dropUnread].Load()
}

// Connected returns the number of ADS streams open.
func (s *Server) Connected() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.streams)
}

// ClientCertificate is the certificate an Envoy presented on its stream
// (xDS over mTLS).
type ClientCertificate struct {
	Node     string    `json:"node"`
	Subject  string    `json:"subject"`
	Serial   string    `json:"serial"` // hexadecimal
	Issuer   string    `json:"issuer"`
	NotAfter time.Time `json:"notAfter"`
}

// ClientCertificates are the client certificates of the open streams
// (none without mTLS), to see which certificates Envoys connected with
// (after a rotation, new connections present the new one).
func (s *Server) ClientCertificates() []ClientCertificate {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]ClientCertificate, 0, len(s.peers))
	for id, c := range s.peers {
		if st := s.streams[id]; st != nil {
			c.Node = st.node
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Node+out[i].Serial < out[j].Node+out[j].Serial })
	return out
}

// peerCertificate is the client certificate of a stream's connection.
func peerCertificate(ctx context.Context) (ClientCertificate, bool) {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return ClientCertificate{}, false
	}
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(info.State.PeerCertificates) == 0 {
		return ClientCertificate{}, false
	}
	c := info.State.PeerCertificates[0]
	return ClientCertificate{Subject: c.Subject.String(), Serial: c.SerialNumber.Text(16), Issuer: c.Issuer.String(), NotAfter: c.NotAfter}, true
}

func (s *Server) onRequest(id int64, req *discoveryv3.DiscoveryRequest) error {
	if req.ErrorDetail != nil {
		s.nack(id, req.GetNode().GetId(), req.TypeUrl, req.ResponseNonce, req.VersionInfo, req.ErrorDetail.GetMessage(), false)
		return nil
	}
	s.mu.Lock()
	st := s.stream(id, req.GetNode().GetId())
	sent, known := st.response(req.TypeUrl, req.ResponseNonce)
	// An ACK names the version of the response it answers; a request that
	// only changes subscriptions after a NACK still carries the old one.
	changed := false
	if known && req.VersionInfo != "" && req.VersionInfo == sent.version {
		changed = s.accepted(st, req.TypeUrl, &sent)
		st.settle(req.TypeUrl, req.ResponseNonce)
	}
	onChange := s.OnChange
	s.mu.Unlock()
	if changed && onChange != nil {
		onChange()
	}
	return nil
}

// stream returns the state of stream id, recording its node when a
// request names it (only the first request of a stream must). Called with
// mu held.
func (s *Server) stream(id int64, node string) *stream {
	st := s.streams[id]
	if st == nil {
		st = &stream{sent: map[string][]sentResponse{}, rejections: map[string]Rejection{}, waiting: map[string]time.Time{}}
		s.streams[id] = st
	}
	if node != "" {
		st.node = cut(node, maxNode)
	}
	return st
}

// response returns what the response of typeURL with nonce carried, if it
// is one of the latest.
func (st *stream) response(typeURL, nonce string) (sentResponse, bool) {
	for _, r := range st.sent[typeURL] {
		if r.nonce == nonce {
			return r, true
		}
	}
	return sentResponse{}, false
}

// settle forgets the names of the response with nonce, once ACKed, and
// moves what the stream waits for past it.
func (st *stream) settle(typeURL, nonce string) {
	sent := st.sent[typeURL]
	for i, r := range sent {
		if r.nonce == nonce {
			sent[i].names, sent[i].table, sent[i].all = nil, nil, false
			st.acked(typeURL, sent, i)
		}
	}
}

// remember records what a response carried, forgetting the oldest of its
// type beyond keptNonces.
func (st *stream) remember(typeURL string, r sentResponse) {
	if _, ok := st.waiting[typeURL]; !ok {
		st.waiting[typeURL] = r.at
	}
	sent := append(st.sent[typeURL], r)
	if len(sent) > keptNonces {
		sent = slices.Delete(sent, 0, len(sent)-keptNonces)
	}
	st.sent[typeURL] = sent
}

// onResponse records what a state-of-the-world response carried: the
// names of rs, or every resource of cur when all.
func (s *Server) onResponse(id int64, resp *discoveryv3.DiscoveryResponse, cur *table, rs []*resource, all bool) {
	r := sentResponse{nonce: resp.Nonce, version: resp.VersionInfo, table: cur, all: all, at: time.Now()}
	if !all {
		r.names = make([]string, len(rs))
		for i, res := range rs {
			r.names[i] = res.name
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stream(id, "").remember(resp.TypeUrl, r)
}

// Incremental (delta) xDS: a response carries only the resources that
// changed, so a NACK is about those, and an ACK settles only those.

func (s *Server) onDeltaResponse(id int64, _ *discoveryv3.DeltaDiscoveryRequest, resp *discoveryv3.DeltaDiscoveryResponse) {
	names := make([]string, 0, len(resp.Resources)+len(resp.RemovedResources))
	for _, r := range resp.Resources {
		names = append(names, r.Name)
	}
	names = append(names, resp.RemovedResources...)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stream(id, "").remember(resp.TypeUrl, sentResponse{nonce: resp.Nonce, version: resp.SystemVersionInfo, names: names, at: time.Now()})
}

func (s *Server) onDeltaRequest(id int64, req *discoveryv3.DeltaDiscoveryRequest) error {
	if req.ErrorDetail != nil {
		s.nack(id, req.GetNode().GetId(), req.TypeUrl, req.ResponseNonce, "", req.ErrorDetail.GetMessage(), true)
		return nil
	}
	s.mu.Lock()
	st := s.stream(id, req.GetNode().GetId())
	sent, known := st.response(req.TypeUrl, req.ResponseNonce)
	changed := false
	if known {
		// Settled: its names are no longer needed (a first response names
		// every resource: 10,001 route configurations per Envoy).
		changed = s.accepted(st, req.TypeUrl, &sent)
		st.settle(req.TypeUrl, req.ResponseNonce)
	}
	onChange := s.OnChange
	s.mu.Unlock()
	if changed && onChange != nil {
		onChange()
	}
	return nil
}

// Serve runs the ADS server on lis until ctx ends, over TLS when tlsConfig
// is set (mTLS: it requires and verifies client certificates).
func (s *Server) Serve(ctx context.Context, lis net.Listener, tlsConfig *tls.Config) error {
	opts := []grpc.ServerOption{
		grpc.MaxConcurrentStreams(1 << 20),
		grpc.MaxRecvMsgSize(s.Limits.MaxRequestBytes),
		// A ping after 30 s without a request, answered within 30 s: an
		// Envoy whose main thread is busy applying a large configuration
		// (seconds at 10,000 hosts) answers late, and dropping it would make
		// it reconnect and be sent everything again (with 5 s, the fan-out
		// benchmark saw tens of clients dropped while syncing); a dead one is
		// still found within a minute.
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: 30 * time.Second, Timeout: 30 * time.Second}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 15 * time.Second, PermitWithoutStream: true}),
	}
	if tlsConfig != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(tlsConfig)))
	}
	opts = append(opts, grpc.ForceServerCodecV2(newCodec()))
	g := grpc.NewServer(opts...)
	g.RegisterService(&adsService, s)
	go func() {
		<-ctx.Done()
		g.Stop()
	}()
	return g.Serve(trackedListener{Listener: lis, conns: &s.conns})
}

// trackedListener keeps the connections it accepts in conns, by remote
// address, until they are closed.
type trackedListener struct {
	net.Listener
	conns *sync.Map
}

func (l trackedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: c, conns: l.conns}
	l.conns.Store(c.RemoteAddr().String(), tc)
	return tc, nil
}

type trackedConn struct {
	net.Conn
	conns *sync.Map
}

func (c *trackedConn) Close() error {
	c.conns.CompareAndDelete(c.RemoteAddr().String(), c)
	return c.Conn.Close()
}

// closeConn closes the connection of a stream's context, if Serve
// accepted it.
func (s *Server) closeConn(ctx context.Context) {
	p, ok := peer.FromContext(ctx)
	if !ok || p.Addr == nil {
		return
	}
	if c, ok := s.conns.Load(p.Addr.String()); ok {
		_ = c.(net.Conn).Close()
	}
}

// adsService is Envoy's AggregatedDiscoveryService, registered by hand so
// that a state-of-the-world stream receives its requests as sotwRequest.
var adsService = grpc.ServiceDesc{
	ServiceName: "envoy.service.discovery.v3.AggregatedDiscoveryService",
	HandlerType: (*any)(nil),
	Streams: []grpc.StreamDesc{{
		StreamName:    "StreamAggregatedResources",
		ServerStreams: true, ClientStreams: true,
		Handler: func(srv any, st grpc.ServerStream) error {
			known := &nameRuns{} // read by this stream's receiving goroutine only
			return srv.(*Server).serveStream(st.Context(), &adsStream{send: st.SendMsg}, func() (any, error) {
				r := &sotwRequest{known: known}
				return r, st.RecvMsg(r)
			})
		},
	}, {
		StreamName:    "DeltaAggregatedResources",
		ServerStreams: true, ClientStreams: true,
		Handler: func(srv any, st grpc.ServerStream) error {
			return srv.(*Server).serveStream(st.Context(), &adsStream{delta: true, send: st.SendMsg}, func() (any, error) {
				r := &discoveryv3.DeltaDiscoveryRequest{}
				return r, st.RecvMsg(r)
			})
		},
	}},
	Metadata: "envoy/service/discovery/v3/ads.proto",
}

// serveStream runs one stream: its requests are read by a goroutine of
// their own, so that a change is sent while the Envoy says nothing.
func (s *Server) serveStream(ctx context.Context, a *adsStream, recv func() (any, error)) error {
	a.s, a.id, a.types, a.timeout = s, streamIDs.Add(1), map[string]*typeState{}, s.ClientTimeout
	cert, mtls := peerCertificate(ctx)
	who := peerKey(ctx, cert, mtls)
	if err := s.open(a.id, who, cert, mtls); err != nil {
		return err
	}
	defer s.closeStream(a.id, who)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	a.ctx = ctx
	reqs := make(chan any)
	go func() {
		defer close(reqs)
		for {
			req, err := recv()
			if err != nil {
				if status.Code(err) == codes.ResourceExhausted {
					s.refused.add(RefusedRequestSize)
					req = status.Errorf(codes.ResourceExhausted, "request over %d bytes (the server's limit): %v", s.Limits.MaxRequestBytes, err)
				} else {
					return
				}
			}
			select {
			case reqs <- req:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return a.run(ctx, reqs)
}

// open records a new stream of peer who, unless the peer has
// Limits.StreamsPerPeer open already.
func (s *Server) open(id int64, who string, cert ClientCertificate, mtls bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.peerStreams[who] >= s.Limits.StreamsPerPeer {
		s.refused.add(RefusedStreamsPerPeer)
		return status.Errorf(codes.ResourceExhausted, "%d ADS streams already open from %s (the server's limit per peer)", s.peerStreams[who], who)
	}
	s.peerStreams[who]++
	s.stream(id, "")
	if mtls {
		s.peers[id] = cert
	}
	return nil
}

// closeStream forgets a stream, and what it rejected.
func (s *Server) closeStream(id int64, who string) {
	s.mu.Lock()
	changed := false
	if st := s.streams[id]; st != nil && len(st.rejections) > 0 {
		for typeURL := range st.rejections {
			s.forget(typeURL)
		}
		changed = true
	}
	delete(s.streams, id)
	delete(s.peers, id)
	if s.peerStreams[who]--; s.peerStreams[who] <= 0 {
		delete(s.peerStreams, who)
	}
	onChange := s.OnChange
	s.mu.Unlock()
	if changed && onChange != nil {
		onChange()
	}
}
