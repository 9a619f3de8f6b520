package xdsserver

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// An ADS stream, state of the world or delta. Every Envoy is served the
// same configuration (the world), so a stream keeps only where its Envoy
// is: for each type, the table its resources come from and what it
// subscribes to (a set shared with the other streams). When the world
// changes, each stream sends what changed in its subscription since that
// table: the names the change touched, looked up in the subscription,
// not the subscription scanned.
//
// A change goes out in two steps, make before break: first the new and
// changed resources of every type, clusters first and routes last; then,
// once the Envoy has answered all of them, the removals, in the reverse
// order (a cluster is removed after the routes that used it changed). The
// next response of a type waits for the Envoy's answer (ACK or NACK) to
// the last one, and listeners and routes wait while clusters are
// unanswered (warming).

// typeState is what a stream knows of one resource type.
type typeState struct {
	// subscribed: a request for the type came.
	subscribed bool
	// wildcard: every resource of the type (listeners, clusters).
	wildcard bool
	names    *nameSet
	// sotwKey is the fingerprint of the names of the last state-of-the-
	// world request, which repeats them all on every ACK.
	sotwKey fingerprint
	// sent is the table the Envoy's resources come from (nil: none yet).
	sent *table
	// fresh are names newly subscribed: sent whether changed or not.
	fresh []string
	// held are resources the Envoy has that the world no longer has, to
	// remove in the second step (by name; the resource as the Envoy has it,
	// nil when unknown).
	held map[string]*resource
	// known are the versions a reconnecting delta Envoy has.
	known map[string]string
	// mustAnswer: the first request of a wildcard type is answered even
	// with nothing (Envoy waits for its listeners and clusters).
	mustAnswer bool
	// awaiting is the nonce of the last response, until the Envoy answers;
	// sentAt is when it was sent.
	awaiting string
	sentAt   time.Time
}

func (ts *typeState) wants(name string) bool { return ts.wildcard || ts.names.has(name) }

// pending reports whether the type has something to send at cur.
func (ts *typeState) pending(cur *table) bool {
	return ts.subscribed && (ts.sent != cur || len(ts.fresh) > 0 || ts.mustAnswer)
}

// fullState reports whether a state-of-the-world response of typeURL
// carries every resource (listeners and clusters); the others carry only
// what changed.
func fullState(typeURL string) bool {
	return typeURL == resourcev3.ListenerType || typeURL == resourcev3.ClusterType
}

type adsStream struct {
	ctx   context.Context
	s     *Server
	id    int64
	delta bool
	types map[string]*typeState
	nonce uint64
	// timeout is how long the client may take to read a response and to
	// answer it (Server.ClientTimeout); none when 0.
	timeout time.Duration
	// writeTimer closes the connection of a send that takes longer than
	// timeout (see write); stopped between sends.
	writeTimer *time.Timer

	// send writes a response: a DiscoveryResponse, a DeltaDiscoveryResponse
	// or a preEncoded one.
	send func(any) error
}

func (a *adsStream) state(typeURL string) *typeState {
	ts := a.types[typeURL]
	if ts == nil {
		ts = &typeState{}
		a.types[typeURL] = ts
	}
	return ts
}

func (a *adsStream) close() {
	for _, ts := range a.types {
		a.s.sets.release(ts.names)
	}
}

// run serves the stream until its requests end or ctx does.
func (a *adsStream) run(ctx context.Context, reqs <-chan any) error {
	defer a.close()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		w := a.s.world.Load()
		if err := a.step(w); err != nil {
			return err
		}
		var unanswered <-chan time.Time
		if ts := a.oldestUnanswered(); ts != nil {
			timer.Reset(time.Until(ts.sentAt.Add(a.timeout)))
			unanswered = timer.C
		}
		select {
		case <-ctx.Done():
			return nil
		case <-unanswered:
			return a.drop(dropUnanswered)
		case <-w.changed:
		case req, ok := <-reqs:
			if !ok {
				return nil
			}
			var err error
			switch r := req.(type) {
			case *sotwRequest:
				err = a.onSotW(r)
				r.release()
			case *discoveryv3.DeltaDiscoveryRequest:
				err = a.onDelta(r)
			case error: // the request could not be read
				err = r
			}
			if err != nil {
				return err
			}
		}
	}
}

// onSotW takes a state-of-the-world request.
func (a *adsStream) onSotW(req *sotwRequest) error {
	if err := a.s.checkType(req.TypeUrl); err != nil {
		return err
	}
	if err := a.s.onRequest(a.id, &req.DiscoveryRequest); err != nil {
		return err
	}
	ts := a.state(req.TypeUrl)
	if req.ResponseNonce != ts.awaiting && ts.awaiting != "" && req.ResponseNonce != "" {
		// An answer to an older response: the Envoy answers the latest
		// next.
		return nil
	}
	ts.awaiting = ""
	first := !ts.subscribed
	ts.subscribed = true
	if !first && req.key == ts.sotwKey {
		return nil // nearly always: an ACK repeating the names
	}
	if req.key.n > a.s.Limits.NamesPerSubscription {
		return a.s.tooManyNames(req.TypeUrl, req.key.n)
	}
	names, err := req.resourceNames()
	if err != nil {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	wildcard := fullState(req.TypeUrl) && len(names) == 0 || slices.Contains(names, "*")
	a.resubscribeSotW(ts, req.key, names, wildcard)
	ts.sotwKey, ts.wildcard = req.key, wildcard
	if first {
		ts.mustAnswer = wildcard
	}
	return nil
}

// checkType refuses a request of a type the server does not serve: what a
// client names never becomes a key or a label.
func (s *Server) checkType(typeURL string) error {
	if typeURL == "" {
		return status.Error(codes.InvalidArgument, "type URL is required for ADS")
	}
	if !knownTypes[typeURL] {
		s.refused.add(RefusedUnknownType)
		return status.Errorf(codes.InvalidArgument, "unknown type URL %q: this server serves only %s", truncate(typeURL), strings.Join(knownTypeList, ", "))
	}
	return nil
}

// tooManyNames refuses a subscription to n names, over the limit.
func (s *Server) tooManyNames(typeURL string, n int) error {
	s.refused.add(RefusedNamesPerSubscription)
	return status.Errorf(codes.ResourceExhausted, "subscription to %d names of %s, over the server's limit of %d", n, typeURL, s.Limits.NamesPerSubscription)
}

// resubscribeSotW replaces the type's names by those of a
// state-of-the-world request (key their fingerprint): the names new to it
// are fresh, and everything is, as for a first request, when it turns to
// a wildcard.
func (a *adsStream) resubscribeSotW(ts *typeState, key fingerprint, names []string, wildcard bool) {
	old := ts.names
	ts.names = nil
	if len(names) > 0 {
		ts.names = a.s.sets.get(key, func() map[string]struct{} {
			set := make(map[string]struct{}, len(names))
			for _, n := range names {
				if n != "*" {
					set[n] = struct{}{}
				}
			}
			return set
		})
	}
	a.s.sets.release(old)
	if wildcard && !ts.wildcard {
		ts.sent = nil // everything, as for a first request
	}
	if ts.names != nil {
		for n := range ts.names.names {
			if !old.has(n) {
				ts.fresh = append(ts.fresh, n)
			}
		}
	}
}

// onDelta takes a delta request: subscriptions change by what it names.
func (a *adsStream) onDelta(req *discoveryv3.DeltaDiscoveryRequest) error {
	if err := a.s.checkType(req.TypeUrl); err != nil {
		return err
	}
	if len(req.ResourceNamesSubscribe) > a.s.Limits.NamesPerSubscription {
		return a.s.tooManyNames(req.TypeUrl, len(req.ResourceNamesSubscribe))
	}
	if err := a.s.onDeltaRequest(a.id, req); err != nil {
		return err
	}
	ts := a.state(req.TypeUrl)
	if req.ResponseNonce != "" && req.ResponseNonce == ts.awaiting {
		ts.awaiting = ""
	}
	if !ts.subscribed {
		ts.subscribed = true
		// An empty first request of listeners or clusters is a wildcard.
		ts.wildcard = fullState(req.TypeUrl) && len(req.ResourceNamesSubscribe) == 0
		ts.mustAnswer = ts.wildcard
		if len(req.InitialResourceVersions) > 0 {
			ts.known = req.InitialResourceVersions
		}
	}
	add, remove, key := deltaChanges(ts, req)
	if len(add) == 0 && len(remove) == 0 {
		return nil
	}
	if key.n > a.s.Limits.NamesPerSubscription {
		return a.s.tooManyNames(req.TypeUrl, key.n)
	}
	a.resubscribeDelta(ts, key, add, remove)
	return nil
}

// deltaChanges are the names a delta request subscribes to and
// unsubscribes from that change the type's names, and the fingerprint of
// the names after; a wildcard it subscribes or unsubscribes is applied
// to ts at once.
func deltaChanges(ts *typeState, req *discoveryv3.DeltaDiscoveryRequest) (add, remove []string, key fingerprint) {
	if ts.names != nil {
		key = ts.names.key
	}
	// seen drops names a request repeats: an Envoy's first request names
	// all 10,001 route configurations, so no search of add or remove.
	seen := map[string]bool{}
	for _, n := range req.ResourceNamesSubscribe {
		if n == "*" {
			if !ts.wildcard {
				ts.wildcard, ts.sent = true, nil
			}
			continue
		}
		if !ts.names.has(n) && !seen[n] {
			seen[n] = true
			add = append(add, n)
			key.add(n)
		}
	}
	clear(seen)
	for _, n := range req.ResourceNamesUnsubscribe {
		if n == "*" {
			ts.wildcard = false
			continue
		}
		if ts.names.has(n) && !seen[n] {
			seen[n] = true
			remove = append(remove, n)
			key.remove(n)
		}
	}
	return add, remove, key
}

// resubscribeDelta changes the type's names by add and remove (key the
// fingerprint of the result); the added names are fresh.
func (a *adsStream) resubscribeDelta(ts *typeState, key fingerprint, add, remove []string) {
	old := ts.names
	ts.names = nil
	if key.n > 0 {
		ts.names = a.s.sets.get(key, func() map[string]struct{} {
			set := map[string]struct{}{}
			if old != nil {
				set = maps.Clone(old.names)
			}
			for _, n := range add {
				set[n] = struct{}{}
			}
			for _, n := range remove {
				delete(set, n)
			}
			return set
		})
	}
	a.s.sets.release(old)
	ts.fresh = append(ts.fresh, add...)
}

// step sends what the world has that the Envoy has not been sent.
func (a *adsStream) step(w *world) error {
	if w.tables == nil {
		// Nothing published yet: an Envoy that connects to a control
		// plane that has just started keeps its configuration until the
		// first one is built.
		return nil
	}
	if err := a.sendUpdates(w); err != nil {
		return err
	}
	for _, t := range publishOrder {
		if ts := a.types[t]; ts != nil && ts.awaiting != "" {
			return nil
		}
	}
	return a.sendRemovals(w)
}

// sendUpdates sends each type's new and changed resources, in
// publishOrder. Envoy answers a response of clusters once they are warm
// (their endpoints and secrets received), so listeners and routes wait
// for that answer: a route never reaches Envoy before its cluster can
// serve. Endpoints and secrets cannot wait for it, and routes cannot wait
// for the listeners' (a listener is warm once it has its routes).
func (a *adsStream) sendUpdates(w *world) error {
	clustersWarming := a.types[resourcev3.ClusterType] != nil && a.types[resourcev3.ClusterType].awaiting != ""
	for _, t := range publishOrder {
		if clustersWarming && (t == resourcev3.ListenerType || t == resourcev3.RouteType) {
			continue
		}
		if ts := a.types[t]; ts != nil && ts.awaiting == "" && ts.pending(w.table(t)) {
			if err := a.update(t, ts, w.table(t)); err != nil {
				return err
			}
			if t == resourcev3.ClusterType && ts.awaiting != "" {
				clustersWarming = true
			}
		}
	}
	return nil
}

// sendRemovals sends the second step, once every update is answered: the
// removals, in the reverse of publishOrder (what uses a resource goes
// before it).
func (a *adsStream) sendRemovals(w *world) error {
	for _, t := range slices.Backward(publishOrder) {
		if ts := a.types[t]; ts != nil && len(ts.held) > 0 {
			if err := a.remove(t, ts, w.table(t)); err != nil {
				return err
			}
		}
	}
	return nil
}

// updates collects what update sends of a type: each resource once, but
// for those a reconnecting Envoy has; and holds what is gone for the
// removals. The resources to send are appended to a slice the caller
// keeps (kept out of the struct, the seen map stays on the stack).
type updates struct {
	ts *typeState
	// holds: the removals are sent (delta, and the state-of-the-world
	// types that carry every resource); otherwise the protocol removes
	// what is gone with what uses it.
	holds bool
	seen  map[string]bool
}

// add appends r to upd, unless it is there already or a reconnecting
// Envoy has it.
func (u *updates) add(upd []*resource, r *resource) []*resource {
	if u.seen[r.name] {
		return upd
	}
	u.seen[r.name] = true
	delete(u.ts.held, r.name)
	if v, ok := u.ts.known[r.name]; ok && v == r.version {
		return upd // a reconnecting Envoy has it
	}
	return append(upd, r)
}

func (u *updates) hold(name string, r *resource) {
	if !u.holds {
		return
	}
	if u.ts.held == nil {
		u.ts.held = map[string]*resource{}
	}
	u.ts.held[name] = r
}

// addSubscribed adds every resource of cur the type is subscribed to, for
// a first response (or the first since a wildcard subscription).
func (u *updates) addSubscribed(upd []*resource, cur *table) []*resource {
	if u.ts.wildcard {
		for _, r := range cur.list() {
			upd = u.add(upd, r)
		}
		return upd
	}
	if u.ts.names != nil {
		for n := range u.ts.names.names {
			if r := cur.byName[n]; r != nil {
				upd = u.add(upd, r)
			}
		}
	}
	return upd
}

// addChanged adds the subscribed resources that changed since the table
// sent, and holds those gone from cur.
func (u *updates) addChanged(upd []*resource, cur *table) []*resource {
	ts := u.ts
	names, ok := cur.since(ts.sent)
	if !ok {
		names = cur.diff(ts.sent)
	}
	for _, n := range names {
		if u.seen[n] || !ts.wants(n) {
			continue
		}
		if r := cur.byName[n]; r != nil {
			upd = u.add(upd, r)
		} else if old := ts.sent.byName[n]; old != nil {
			u.hold(n, old)
		}
	}
	return upd
}

// holdKnownGone holds what a reconnecting Envoy has that is gone, to
// remove it; the versions it had are then no longer needed.
func (u *updates) holdKnownGone(cur *table) {
	if u.ts.known == nil {
		return
	}
	for n := range u.ts.known {
		if cur.byName[n] == nil && u.ts.wants(n) {
			u.hold(n, nil)
		}
	}
	u.ts.known = nil
}

// update sends the type's new and changed resources at cur.
func (a *adsStream) update(typeURL string, ts *typeState, cur *table) error {
	u := updates{ts: ts, holds: a.delta || fullState(typeURL), seen: map[string]bool{}}
	var upd []*resource
	switch {
	case ts.sent == nil:
		upd = u.addSubscribed(upd, cur)
	case ts.sent != cur:
		upd = u.addChanged(upd, cur)
	}
	for _, n := range ts.fresh {
		if r := cur.byName[n]; r != nil {
			upd = u.add(upd, r)
		}
	}
	u.holdKnownGone(cur)
	answer := ts.mustAnswer
	ts.sent, ts.fresh, ts.mustAnswer = cur, nil, false
	if len(upd) == 0 && !answer {
		return nil
	}
	if a.delta {
		return a.respondDelta(typeURL, ts, cur, upd, nil)
	}
	if fullState(typeURL) {
		// The whole set, with what the Envoy must keep until the removals.
		upd = a.fullSet(ts, cur)
		for _, r := range ts.held {
			if r != nil {
				upd = append(upd, r)
			}
		}
	}
	return a.respondSotW(typeURL, ts, cur, upd)
}

// fullSet is every resource of cur the type's subscription wants.
func (a *adsStream) fullSet(ts *typeState, cur *table) []*resource {
	if ts.wildcard {
		return slices.Clone(cur.list())
	}
	var out []*resource
	for _, r := range cur.list() {
		if ts.names.has(r.name) {
			out = append(out, r)
		}
	}
	return out
}

// remove sends the second step: the type's removals.
func (a *adsStream) remove(typeURL string, ts *typeState, cur *table) error {
	held := ts.held
	ts.held = nil
	if a.delta {
		return a.respondDelta(typeURL, ts, cur, nil, slices.Sorted(maps.Keys(held)))
	}
	return a.respondSotW(typeURL, ts, cur, a.fullSet(ts, cur))
}

func (a *adsStream) nextNonce() string {
	a.nonce++
	return strconv.FormatUint(a.nonce, 10)
}

func (a *adsStream) respondSotW(typeURL string, ts *typeState, cur *table, rs []*resource) error {
	resp := &discoveryv3.DiscoveryResponse{TypeUrl: typeURL, VersionInfo: cur.versionString(), Nonce: a.nextNonce()}
	a.sent(ts, resp.Nonce)
	everything := all(rs, cur)
	a.s.onResponse(a.id, resp, cur, rs, everything)
	if everything {
		b, err := cur.encodeAll(typeURL, false)
		if err != nil {
			return err
		}
		return a.write(&preEncoded{shared: b, nonce: resp.Nonce})
	}
	return a.write(&composed{head: responseHead(typeURL, resp.VersionInfo, nil), rs: rs, nonce: resp.Nonce})
}

func (a *adsStream) respondDelta(typeURL string, ts *typeState, cur *table, rs []*resource, removed []string) error {
	resp := &discoveryv3.DeltaDiscoveryResponse{TypeUrl: typeURL, SystemVersionInfo: cur.versionString(), Resources: make([]*discoveryv3.Resource, len(rs)),
		RemovedResources: removed, Nonce: a.nextNonce()}
	for i, r := range rs {
		resp.Resources[i] = r.delta
	}
	a.sent(ts, resp.Nonce)
	a.s.onDeltaResponse(a.id, nil, resp)
	if len(removed) == 0 && all(rs, cur) {
		b, err := cur.encodeAll(typeURL, true)
		if err != nil {
			return err
		}
		return a.write(&preEncoded{shared: b, nonce: resp.Nonce})
	}
	return a.write(&composed{head: responseHead(typeURL, resp.SystemVersionInfo, removed), rs: rs, delta: true, nonce: resp.Nonce})
}

// all reports whether rs, distinct resources, are every resource of cur,
// whose shared encoding can then be sent.
func all(rs []*resource, cur *table) bool {
	if len(rs) != len(cur.byName) || len(rs) == 0 {
		return false
	}
	for _, r := range rs {
		if cur.byName[r.name] != r {
			return false
		}
	}
	return true
}

// A client that stops reading what it is sent, or answering it, must not
// hold anything the fleet needs. No response waits for a resource shared
// with other streams: every response is written from encodings shared by
// all of them (preEncoded or composed), so there is no per-stream copy to
// ration. (There were 8 slots for responses over 1 MiB, each held until
// the response was answered: 8 clients that never answered held them for
// good, and no Envoy was sent a large change until they went away.) And
// such a stream is dropped after its timeout (Server.ClientTimeout), its
// connection closed: a response not answered (ACK or NACK) within it, or
// one gRPC could not hand to the connection within it (the client does
// not read: HTTP/2 flow control stops the writes). What it holds
// meanwhile is its own state, a few bytes per resource of the responses
// queued for it, and the published versions they reference; an Envoy
// answers within seconds (warming clusters, within its initial fetch
// timeout of 15 s).

// sent records the response of ts with nonce as sent, now.
func (a *adsStream) sent(ts *typeState, nonce string) {
	ts.awaiting = nonce
	if a.timeout > 0 {
		ts.sentAt = time.Now()
	}
}

// oldestUnanswered is the type whose response has waited longest for an
// answer; nil when none waits, or without a timeout.
func (a *adsStream) oldestUnanswered() *typeState {
	if a.timeout <= 0 {
		return nil
	}
	var oldest *typeState
	for _, ts := range a.types {
		if ts.awaiting != "" && (oldest == nil || ts.sentAt.Before(oldest.sentAt)) {
			oldest = ts
		}
	}
	return oldest
}

// write sends a response. With a timeout, a send that does not return
// within it (the client does not read: HTTP/2 flow control holds the
// writes) has its connection closed by a timer, which ends the send, and
// drops the stream. The send stays on the stream's goroutine: handing
// // every response to another one cost BenchmarkSotWRouteChange 20-60% of
// its time on a loaded machine (a timer per stream, reset for each send,
// costs nothing measurable).
func (a *adsStream) write(m any) error {
	if a.timeout <= 0 {
		return a.send(m)
	}
	if a.writeTimer == nil {
		a.writeTimer = time.AfterFunc(a.timeout, func() { a.s.closeConn(a.ctx) })
	} else {
		a.writeTimer.Reset(a.timeout)
	}
	err := a.send(m)
	if !a.writeTimer.Stop() {
		return a.drop(dropUnread)
	}
	return err
}

// Why a stream was dropped.
const (
	dropUnanswered = iota // a response not answered in time
	dropUnread            // a response not read in time
)

// drop counts and logs a stream dropped for reason, closes its
// connection and returns the error that ends the stream. Its connection
// is closed because the stream's end (its trailers) would wait behind
// what the client did not read, and gRPC would hold what is queued for it
// for as long as the client keeps the connection open (an Envoy has one
// ADS stream per connection).
func (a *adsStream) drop(reason int) error {
	a.s.dropped[reason].Add(1)
	a.s.mu.Lock()
	node := a.s.stream(a.id, "").node
	a.s.mu.Unlock()
	what := [...]string{dropUnanswered: "did not answer (ACK or NACK) a response", dropUnread: "did not read a response"}[reason]
	a.s.log.Warn("dropping an xDS stream: the client "+what+" within the client timeout", "node", node, "delta", a.delta,
		"timeout", a.timeout)
	a.s.closeConn(a.ctx)
	return status.Errorf(codes.DeadlineExceeded, "the client %s within %s", what, a.timeout)
}

// streamIDs numbers the streams of every server of the process.
var streamIDs atomic.Int64
