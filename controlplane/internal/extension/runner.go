package extension

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/portcullis/portcullis/controlplane/internal/extension/guard"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/translator"
	"github.com/portcullis/portcullis/extension/api/v1alpha1"
)

// RouteKey names one Envoy route of a translation: its route
// configuration, its virtual host, and its position among the virtual
// host's routes.
type RouteKey struct {
	RouteConfiguration string
	VirtualHost        string
	Route              int
}

// Refs are what a translation gives the extensions (RefsOf), by the
// names of the Envoy resources made of it.
type Refs struct {
	// Routes give the extensions something (ir.Route.Extension), by the
	// name of their Envoy route (ir.Route.Name). PostRouteModify is called
	// for each Envoy route of such a name, in every virtual host that has
	// one, when the extension owns one of its resources; a name no route
	// has is ignored.
	Routes map[string]*ir.RouteExtension
	// Clusters stand for objects of the extensions' backend kinds
	// (ir.Cluster.Extension), by cluster name: PostClusterModify is called
	// for each of the owner's.
	Clusters map[string]*ir.ExtensionResource
	// Listeners are the policies attached to the Gateways a listener
	// serves (ir.Listener.Extensions), by listener name: its
	// PostHTTPListenerModify receives the owner's.
	Listeners map[string][]ir.ExtensionResource
	// Policies are every valid policy of the extensions
	// (ir.Model.ExtensionPolicies): PostTranslateModify receives the
	// owner's.
	Policies []ir.ExtensionResource
}

// Outcome is how one hook call ended, as the metric's label says.
type Outcome string

// The outcomes.
const (
	OutcomeOK      Outcome = "ok"      // called; a valid answer
	OutcomeCached  Outcome = "cached"  // not called: the same request's last answer, still valid
	OutcomeError   Outcome = "error"   // the call failed (a gRPC status other than OK and DeadlineExceeded)
	OutcomeTimeout Outcome = "timeout" // the call's deadline, or the phase budget, passed
	OutcomeInvalid Outcome = "invalid" // an answer that failed validation
)

// Outcomes are every outcome.
var Outcomes = []Outcome{OutcomeOK, OutcomeCached, OutcomeError, OutcomeTimeout, OutcomeInvalid}

// Failure is one failed hook call, for the ExtensionError condition of the
// objects it concerns.
type Failure struct {
	// Extension is the registration's name; Policy its failure policy.
	Extension string
	Policy    FailurePolicy
	Hook      Hook
	// Resource names what the call was about (or, for an invalid answer to
	// PostTranslateModify, the resource that made it invalid), e.g.
	// `virtual host "a.example.com" of RouteConfiguration "ingress_http"`.
	Resource string
	// Outcome is OutcomeError, OutcomeTimeout or OutcomeInvalid.
	Outcome Outcome
	// Code is the call's gRPC status code: OK for an invalid answer to a
	// call that succeeded.
	Code codes.Code
	// Message is the status's message, or what is wrong with the answer.
	Message string
	// Origins are the objects the resource came from (translator.Index),
	// sorted; empty for the configuration as a whole (PostTranslateInsert).
	Origins ir.Origins
}

func (f Failure) Error() string {
	return fmt.Sprintf("extension %q: hook %s failed (%s, %s) for %s: %s", f.Extension, f.Hook, f.Outcome, f.Code, f.Resource, f.Message)
}

// Runner calls an extension's hooks on the translator's output. Apply is
// for one goroutine at a time (it keeps the answers of the last call).
type Runner struct {
	reg      Registration
	client   v1alpha1.ExtensionServerClient
	callOpts []grpc.CallOption
	// calls is metric curried with the extension's name.
	calls, metric *prometheus.CounterVec
	// cache holds the valid answers of the last Apply, by request.
	cache map[cacheKey]proto.Message
	// conn is the connection Connect dialed (WatchReady); nil for a
	// runner made by NewRunner alone.
	conn *grpc.ClientConn
	// endpoints, for a registration reached through an ExtensionService,
	// sets the connection's addresses (SetEndpoints); last what it set.
	endpoints *manual.Resolver
	last      []string
	// idle: the last Apply called none of the hooks (Idle).
	idle bool
	// secrets, for a registration whose TLS names Secrets, holds them
	// (SetSecrets).
	secrets *secretTLS
	// own are the host's addresses, which added endpoints may not have
	// (guard.CheckEndpoints).
	own []netip.Addr
	// keys are the cache keys of the last Apply's requests by identity
	// (subject.identity), and same whether the answer of a cache key is
	// its request's input unchanged (see passThrough).
	keys map[identityKey]cacheKey
	same map[cacheKey]bool
	// passed are the route configurations of the last Apply whose every
	// virtual host the extension passed through, by version
	// (translator.Versions: no two messages have the same), with their
	// names and the cache keys of their hosts' requests (whose answers are
	// in cache): see passedAgain.
	passed map[uint64]passedConfig
	// docs/design/caches.md lists these caches, their keys and what
	// invalidates them.
}

// passedConfig is a route configuration of Runner.passed.
type passedConfig struct {
	name string
	keys []cacheKey
}

// identityKey is a hook and a request's identity (subject.identity).
type identityKey struct {
	hook Hook
	id   any
}

// cacheKey is a hook and the hash of its deterministic request.
type cacheKey struct {
	hook Hook
	sum  [sha256.Size]byte
}

// NewRunner returns a runner of the registration's hooks over conn (see
// Dial). The registration must validate.
func NewRunner(reg Registration, conn grpc.ClientConnInterface) (*Runner, error) {
	if err := reg.Validate(); err != nil {
		return nil, err
	}
	reg = reg.withDefaults()
	client := v1alpha1.NewExtensionServerClient(conn)
	if reg.Dialect == DialectEnvoyGateway {
		client = newEGClient(conn, *reg.Translation)
	}
	r := &Runner{
		reg:      reg,
		client:   client,
		callOpts: []grpc.CallOption{grpc.MaxCallRecvMsgSize(reg.MaxMessageSize), grpc.MaxCallSendMsgSize(reg.MaxMessageSize)},
		cache:    map[cacheKey]proto.Message{},
		own:      guard.OwnAddresses(),
	}
	r.useMetric(newCallsMetric())
	return r, nil
}

func newCallsMetric() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "portcullis_extension_hook_calls_total",
		Help: "Extension hook calls, by extension, hook and outcome (ok, cached: the last answer reused, error, timeout, invalid: the answer failed validation).",
	}, []string{"extension", "hook", "outcome"})
}

// useMetric counts the runner's calls in vec (a Chain's runners share one).
func (r *Runner) useMetric(vec *prometheus.CounterVec) {
	r.metric = vec
	r.calls = vec.MustCurryWith(prometheus.Labels{"extension": r.reg.Name})
	// Every series exists from the start, at zero, for rate() and absent().
	for _, h := range r.reg.Hooks {
		for _, o := range Outcomes {
			r.calls.WithLabelValues(string(h), string(o))
		}
	}
}

// Collector is the runner's metric, for the control plane's registry.
func (r *Runner) Collector() prometheus.Collector { return r.metric }

// SetEndpoints gives a runner whose registration names an ExtensionService
// the addresses (host:port) of its endpoints, from the build the hooks are
// about to run on; a no-op for others, and when they did not change. No
// endpoints make every call fail (Unavailable), under the failure policy.
func (r *Runner) SetEndpoints(addrs []string) {
	if r.endpoints == nil || slices.Equal(addrs, r.last) && r.last != nil {
		return
	}
	r.last = slices.Clone(addrs)
	if r.last == nil {
		r.last = []string{}
	}
	st := resolver.State{}
	for _, a := range addrs {
		st.Addresses = append(st.Addresses, resolver.Address{Addr: a})
	}
	r.endpoints.UpdateState(st)
}

// SetSecrets gives a runner whose registration takes its TLS material
// from Secrets (tls.caSecret, tls.clientCertificateSecret) those of the
// build the hooks are about to run on; a no-op for others. A Secret that
// is missing or unusable fails the calls' handshakes, saying which.
func (r *Runner) SetSecrets(lookup SecretLookup) {
	if r.secrets != nil {
		r.secrets.set(lookup)
	}
}

// Idle reports whether the last Apply called none of the extension's
// hooks (not even from the cache): e.g. it answers only PostRouteModify
// and no route references its kinds. Registered but never called is
// worth saying, not leaving silent.
func (r *Runner) Idle() bool { return r.idle }

// Registration is the runner's registration, defaults filled in.
func (r *Runner) Registration() Registration { return r.reg }

// Apply runs the subscribed hooks on res, in this order:
// PostTranslateInsert (its request is empty, so its place is invisible to
// the extension; first, so that every other answer is checked against the
// clusters it adds), PostClusterModify for each cluster of refs (an
// extension backend), PostRouteModify for each route of refs,
// PostVirtualHostModify for every virtual host (with its routes as
// PostRouteModify left them, as the contract says),
// PostHTTPListenerModify for every listener with an HTTP connection
// manager, then PostTranslateModify. Calls run concurrently within
// MaxConcurrency, each within Timeout and all within PhaseBudget.
//
// res is never modified: the Resources returned share its unchanged
// messages (and the answers, which later Applys may reuse), so neither
// may be modified either. Its Index is res's: resources the extension
// added have no origins.
//
// Every failed call is a Failure. Under FailOpen the failed hook's change
// is skipped (its input kept) and the rest applies. Under FailClosed any
// failure makes the returned Resources nil: do not publish, keep the last
// good configuration (every hook still runs, so that every failure is
// reported).
func (r *Runner) Apply(ctx context.Context, res *translator.Resources, refs Refs) (*translator.Resources, []Failure) {
	ctx, cancel := context.WithTimeout(ctx, r.reg.PhaseBudget)
	defer cancel()
	// The maps are sized like the last Apply's: a change keeps almost
	// all of them.
	ru := &run{r: r, ctx: ctx, sem: make(chan struct{}, r.reg.MaxConcurrency), index: res.Index,
		used: make(map[cacheKey]proto.Message, len(r.cache)), keys: make(map[identityKey]cacheKey, len(r.keys)),
		same: make(map[cacheKey]bool, len(r.same)), passed: make(map[uint64]passedConfig, len(r.passed)), versions: res.Versions}
	// Encoded is by message: what a hook changes is a new message.
	out := &translator.Resources{
		Listeners: res.Listeners, Routes: res.Routes, Clusters: res.Clusters,
		Endpoints: res.Endpoints, Secrets: res.Secrets, Index: res.Index, Encoded: res.Encoded,
	}
	ru.ours = newNames(res)
	ru.refs = refs
	ru.listeners = res.Listeners
	ru.translated = res.Routes
	ru.known = ru.ours.clusters

	ru.phases(out, refs)

	r.cache = ru.used // drop the answers this run did not use
	r.idle = ru.n.Load() == 0
	r.keys, r.same, r.passed = ru.keys, ru.same, ru.passed
	out.Versions = keptVersions(res, out)
	failures := ru.failures
	sort.SliceStable(failures, func(i, j int) bool {
		a, b := failures[i], failures[j]
		if a.Hook != b.Hook {
			return a.Hook < b.Hook
		}
		return a.Resource < b.Resource
	})
	if len(failures) > 0 && r.reg.FailurePolicy == FailClosed {
		return nil, failures
	}
	return out, failures
}

// phases runs the subscribed hooks on out, in Apply's order.
func (ru *run) phases(out *translator.Resources, refs Refs) {
	r := ru.r
	if r.reg.Subscribed(HookPostTranslateInsert) {
		ru.insert(out)
	}
	if r.reg.Subscribed(HookPostClusterModify) && len(refs.Clusters) > 0 {
		out.Clusters = ru.modifyClusters(out.Clusters, refs.Clusters)
	}
	if r.reg.Subscribed(HookPostEndpointsModify) {
		out.Endpoints = ru.modifyEndpoints(out.Endpoints)
	}
	routes := map[RouteKey]*routev3.Route{}
	if r.reg.Subscribed(HookPostRouteModify) && len(refs.Routes) > 0 {
		routes = ru.modifyRoutes(out.Routes, refs.Routes)
	}
	if r.reg.Subscribed(HookPostVirtualHostModify) || len(routes) > 0 {
		rcs := ru.modifyVirtualHosts(out.Routes, routes)
		if ru.keepsSomething(HookPostVirtualHostModify, "every virtual host", virtualHosts(out.Routes), virtualHosts(rcs)) {
			out.Routes = rcs
		}
	}
	if r.reg.Subscribed(HookPostHTTPListenerModify) {
		ls := ru.modifyListeners(out.Listeners, out.Routes)
		if ru.keepsSomething(HookPostHTTPListenerModify, "every listener", len(out.Listeners), len(ls)) {
			out.Listeners = ls
		}
	}
	if r.reg.Subscribed(HookPostTranslateModify) {
		ru.modifyAll(out)
	}
}

// keptVersions are the versions of res (translator.Versions) that still
// hold in out, what Apply made of it: those of the messages out keeps
// (the same messages, not copies: a message is never modified). The next
// extension of a Chain keys its identities by them.
func keptVersions(res, out *translator.Resources) *translator.Versions {
	sameHTTPS := sameListener(res, out, translator.HTTPSListenerName)
	if res.Versions == nil || sameHTTPS && slices.Equal(res.Routes, out.Routes) {
		return res.Versions // all kept: the common case, at no cost
	}
	in := make(map[string]proto.Message, len(res.Routes))
	for _, m := range res.Routes {
		in[translator.ResourceName(m)] = m
	}
	kept := make(map[string]bool, len(out.Routes))
	for _, m := range out.Routes {
		name := translator.ResourceName(m)
		kept[name] = in[name] == m
	}
	return res.Versions.Kept(func(rc string) bool { return kept[rc] }, sameHTTPS)
}

// sameListener reports whether out keeps res's listener of that name.
func sameListener(res, out *translator.Resources, name string) bool {
	find := func(ls []proto.Message) proto.Message {
		for _, l := range ls {
			if translator.ResourceName(l) == name {
				return l
			}
		}
		return nil
	}
	return find(res.Listeners) == find(out.Listeners)
}

// run is the state of one Apply.
type run struct {
	r     *Runner
	ctx   context.Context // the phase budget
	refs  Refs
	sem   chan struct{}
	index *translator.Index
	// versions are the input's (the messages the hooks are called on).
	versions *translator.Versions
	// ours are the names of the translator's resources; known the
	// clusters routes may use (ours and those PostTranslateInsert
	// added); dangling the clusters the translator's routes already
	// referenced without a cluster (not the extension's doing).
	ours  names
	known map[string]bool
	// dangling is danglingClusters of translated (the input's route
	// configurations), worked out when a check first needs it (danglingSet).
	translated   []proto.Message
	danglingOnce sync.Once
	dangling     map[string]bool

	mu       sync.Mutex
	used     map[cacheKey]proto.Message
	keys     map[identityKey]cacheKey
	same     map[cacheKey]bool
	passed   map[uint64]passedConfig
	failures []Failure
	// n counts the hook calls (answered from the cache or not).
	n atomic.Int64
	// listeners are the input's; fs their protecting filters, worked out
	// when a check first needs them (the guard's).
	listeners []proto.Message
	fsOnce    sync.Once
	fs        guard.Filters
}

// filters are the protecting filters of the input's connection managers.
func (ru *run) filters() guard.Filters {
	ru.fsOnce.Do(func() {
		ru.fs = guard.Filters{}
		for _, m := range ru.listeners {
			if l, ok := m.(*listenerv3.Listener); ok && hasHCM(l) {
				hs, _ := hcms(l) // one that does not decode protects nothing it could be held to
				ru.fs.Add(slices.Collect(maps.Values(hs))...)
			}
		}
	})
	return ru.fs
}

// oursFunc says whether a cluster is one the translator made.
func (ru *run) oursFunc() guard.Ours { return func(c string) bool { return ru.ours.clusters[c] } }

// subject is what a call is about, for its Failure.
type subject struct {
	resource string
	typeURL  string // with names, to find the origins in the index
	names    []string
	vhost    string // narrows the origins of a route configuration (names[0]) to one of its virtual hosts
	origins  ir.Origins
	// identity, when not nil, stands for the whole request: a request of
	// the same identity as one of the last Apply is the same request, and
	// reuses its cache key without marshalling and hashing it again. It
	// holds the request's content: small parts encoded, the big ones by
	// their translator.Versions.
	identity any
	// fresh: the answer is never reused (nor kept for reuse), the hook is
	// called every time. For PostTranslateInsert, whose request is empty:
	// its answer depends on the extension's own state alone (e.g. a new
	// upstream after a restart), which no request key can see.
	fresh bool
}

func (s subject) originsIn(x *translator.Index) ir.Origins {
	switch {
	case s.origins != nil || s.typeURL == "":
		return s.origins
	case s.vhost != "":
		return x.VirtualHostObjects(s.typeURL, s.names[0], s.vhost)
	}
	return x.Objects(s.typeURL, s.names, "")
}

// invalid is what is wrong with an answer, and about which resource when
// it is not the call's (PostTranslateModify).
type invalid struct {
	about *subject
	msg   string
}

func (e *invalid) Error() string { return e.msg }

func invalidf(format string, args ...any) error { return &invalid{msg: fmt.Sprintf(format, args...)} }

// call calls hook with req, or reuses the last valid answer to the same
// request, and checks the answer. It reports a failure and returns false
// when the call failed or the answer is invalid.
func call[Req, Resp proto.Message](ru *run, hook Hook, about subject, req Req,
	rpc func(context.Context, Req, ...grpc.CallOption) (Resp, error), check func(Resp) error) (Resp, bool) {
	resp, _, ok := callKeyed(ru, hook, about, req, rpc, func(resp Resp, _ cacheKey) error { return check(resp) })
	return resp, ok
}

// callKeyed is call, with the request's cache key (for passThrough).
func callKeyed[Req, Resp proto.Message](ru *run, hook Hook, about subject, req Req,
	rpc func(context.Context, Req, ...grpc.CallOption) (Resp, error), check func(Resp, cacheKey) error) (Resp, cacheKey, bool) {
	var zero Resp
	key, ok := ru.requestKey(hook, about, req)
	if !ok {
		return zero, key, false
	}
	var resp Resp
	outcome := OutcomeCached
	var cached proto.Message
	hit := false
	if !about.fresh {
		cached, hit = ru.answered(hook, about, key)
	}
	if hit {
		resp = cached.(Resp)
	} else {
		outcome = OutcomeOK
		if resp, ok = invoke(ru, hook, about, req, rpc); !ok {
			return zero, key, false
		}
	}
	// Cached answers are checked again: what they are checked against
	// (the clusters that exist) may have changed.
	if err := check(resp, key); err != nil {
		var inv *invalid
		if errors.As(err, &inv) && inv.about != nil {
			about = *inv.about
		}
		ru.fail(hook, about, OutcomeInvalid, codes.OK, "invalid answer: "+err.Error())
		return zero, key, false
	}
	if !about.fresh {
		ru.mu.Lock()
		ru.used[key] = resp
		ru.mu.Unlock()
	}
	ru.r.calls.WithLabelValues(string(hook), string(outcome)).Inc()
	ru.n.Add(1)
	return resp, key, true
}

// requestKey is the cache key of req: the last Apply's for the same
// identity, else its encoding's hash. It reports a failure and returns
// false when req cannot be encoded.
func (ru *run) requestKey(hook Hook, about subject, req proto.Message) (cacheKey, bool) {
	key, known := ru.r.keys[identityKey{hook, about.identity}]
	if about.identity != nil && known {
		return key, true
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(req)
	if err != nil {
		ru.fail(hook, about, OutcomeError, codes.Internal, "marshal the request: "+err.Error())
		return cacheKey{}, false
	}
	return cacheKey{hook: hook, sum: sha256.Sum256(b)}, true
}

// answered records key as the request's for its identity, and returns the
// answer to it this Apply or the last one received, if any.
func (ru *run) answered(hook Hook, about subject, key cacheKey) (proto.Message, bool) {
	ru.mu.Lock()
	defer ru.mu.Unlock()
	if about.identity != nil {
		ru.keys[identityKey{hook, about.identity}] = key
	}
	cached, ok := ru.used[key]
	if !ok {
		cached, ok = ru.r.cache[key]
	}
	return cached, ok
}

// invoke makes the call, within the concurrency bound, the call's timeout
// and the phase budget. It reports a failure and returns false when the
// call was not made or failed.
func invoke[Req, Resp proto.Message](ru *run, hook Hook, about subject, req Req,
	rpc func(context.Context, Req, ...grpc.CallOption) (Resp, error)) (Resp, bool) {
	var zero Resp
	select {
	case ru.sem <- struct{}{}:
	case <-ru.ctx.Done():
		ru.fail(hook, about, OutcomeTimeout, codes.DeadlineExceeded, fmt.Sprintf("not called: the phase budget (%v) of the extension's calls ran out", ru.r.reg.PhaseBudget))
		return zero, false
	}
	// A call whose own deadline is past the budget's is cut by the
	// budget: its failure says so.
	budgetCut := false
	if d, ok := ru.ctx.Deadline(); ok && time.Until(d) <= ru.r.reg.Timeout {
		budgetCut = true
	}
	cctx, cancel := context.WithTimeout(ru.ctx, ru.r.reg.Timeout)
	resp, err := rpc(cctx, req, ru.r.callOpts...)
	cancel()
	<-ru.sem
	if err != nil {
		ru.callFailed(hook, about, err, budgetCut)
		return zero, false
	}
	return resp, true
}

// callFailed reports a failed call, saying which deadline passed when one
// did.
func (ru *run) callFailed(hook Hook, about subject, err error, budgetCut bool) {
	st := status.Convert(err)
	o, msg := OutcomeError, st.Message()
	if st.Code() == codes.Unimplemented && strings.Contains(msg, "unknown service") {
		msg += fmt.Sprintf(" (the extension does not serve dialect %s: is its dialect the other one?)", ru.r.reg.Dialect)
	}
	if st.Code() == codes.DeadlineExceeded {
		o = OutcomeTimeout
		if budgetCut {
			msg = fmt.Sprintf("the phase budget (%v) of the extension's calls ran out: %s", ru.r.reg.PhaseBudget, msg)
		} else {
			msg = fmt.Sprintf("no answer within the timeout (%v): %s", ru.r.reg.Timeout, msg)
		}
	}
	ru.fail(hook, about, o, st.Code(), msg)
}

// passThrough reports whether out, the resource of the answer to the
// request of cache key key, is in unchanged (proto.Equal). It is worked
// out once per answer: an answer is only reused for the same request
// (the same key), whose input is the same. An answer
// that passes its input through is not checked (the checks are of what
// an extension changes; the translator's own output is not held against
// it), and the caller keeps in, the translator's message, so that an
// unchanged resource stays the same pointer from one rebuild to the next
// (as it is without an extension: the xDS server's hashes and the route
// configurations are then reused).
func (ru *run) passThrough(key cacheKey, out, in proto.Message) bool {
	ru.mu.Lock()
	same, ok := ru.same[key]
	if !ok {
		same, ok = ru.r.same[key]
	}
	ru.mu.Unlock()
	if !ok {
		same = proto.Equal(out, in)
	}
	ru.mu.Lock()
	ru.same[key] = same
	ru.mu.Unlock()
	return same
}

func (ru *run) fail(hook Hook, about subject, o Outcome, code codes.Code, msg string) {
	ru.n.Add(1)
	ru.r.calls.WithLabelValues(string(hook), string(o)).Inc()
	f := Failure{Extension: ru.r.reg.Name, Policy: ru.r.reg.FailurePolicy, Hook: hook, Resource: about.resource, Outcome: o, Code: code, Message: msg, Origins: about.originsIn(ru.index)}
	ru.mu.Lock()
	ru.failures = append(ru.failures, f)
	ru.mu.Unlock()
}

// each calls f(i) for every i in [0, n) on up to MaxConcurrency
// goroutines (call also bounds the calls in flight: cached answers need
// no slot).
func (ru *run) each(n int, f func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(ru.r.reg.MaxConcurrency, n) {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				f(i)
			}
		})
	}
	wg.Wait()
}

// insert runs PostTranslateInsert and adds its clusters and secrets.
func (ru *run) insert(out *translator.Resources) {
	// fresh: the empty request would be the same key on every Apply.
	about := subject{resource: "the configuration (clusters and secrets to add)", fresh: true}
	resp, ok := call(ru, HookPostTranslateInsert, about, &v1alpha1.PostTranslateInsertRequest{}, ru.r.client.PostTranslateInsert,
		func(resp *v1alpha1.PostTranslateInsertResponse) error {
			if err := checkAdded("cluster", resp.GetClusters(), ru.ours.clusters); err != nil {
				return err
			}
			if err := ru.checkEndpoints(resp.GetClusters()); err != nil {
				return err
			}
			return checkAdded("secret", resp.GetSecrets(), ru.ours.secrets)
		})
	if !ok || len(resp.GetClusters())+len(resp.GetSecrets()) == 0 {
		return
	}
	known := make(map[string]bool, len(ru.known)+len(resp.GetClusters()))
	for n := range ru.known {
		known[n] = true
	}
	out.Clusters = appendSorted(out.Clusters, resp.GetClusters())
	for _, c := range resp.GetClusters() {
		known[c.GetName()] = true
	}
	ru.known = known
	out.Secrets = appendSorted(out.Secrets, resp.GetSecrets())
}

// checkAdded checks resources an extension adds: valid, named, unique, and
// not named as one of ours.
func checkAdded[M interface {
	proto.Message
	GetName() string
}](kind string, ms []M, ours map[string]bool) error {
	seen := map[string]bool{}
	for _, m := range ms {
		n := m.GetName()
		switch {
		case n == "":
			return invalidf("a %s without a name", kind)
		case ours[n]:
			return invalidf("%s %q is the name of one of Portcullis's (an extension adds its own; it replaces ours only through PostTranslateModify)", kind, n)
		case seen[n]:
			return invalidf("two %ss named %q", kind, n)
		}
		seen[n] = true
		if err := validate(m); err != nil {
			return invalidf("%s %q: %v", kind, n, err)
		}
	}
	return nil
}

// appendSorted returns a new list of ms and add, sorted by name.
func appendSorted[M proto.Message](ms []proto.Message, add []M) []proto.Message {
	out := make([]proto.Message, 0, len(ms)+len(add))
	out = append(out, ms...)
	for _, m := range add {
		out = append(out, m)
	}
	sort.SliceStable(out, func(i, j int) bool { return translator.ResourceName(out[i]) < translator.ResourceName(out[j]) })
	return out
}

// modifyRoutes runs PostRouteModify for each route of refs that carries
// a resource of the extension, and returns the routes it changed.
func (ru *run) modifyRoutes(rcs []proto.Message, refs map[string]*ir.RouteExtension) map[RouteKey]*routev3.Route {
	type item struct {
		key RouteKey
		vh  *routev3.VirtualHost
		in  *routev3.Route
		req *v1alpha1.PostRouteModifyRequest
	}
	var items []item
	for _, m := range rcs {
		rc, ok := m.(*routev3.RouteConfiguration)
		if !ok {
			continue
		}
		for _, vh := range rc.GetVirtualHosts() {
			for i, rt := range vh.GetRoutes() {
				if rt.GetName() == "" {
					continue
				}
				req := ru.routeRequest(rt, refs[rt.GetName()], vh)
				if req != nil {
					items = append(items, item{RouteKey{rc.GetName(), vh.GetName(), i}, vh, rt, req})
				}
			}
		}
	}
	changed := make([]*routev3.Route, len(items))
	ru.each(len(items), func(i int) {
		it := items[i]
		k, c := it.key, it.req.GetContext()
		about := subject{
			resource: fmt.Sprintf("route %q (%s %s/%s, rule %d) of virtual host %q of RouteConfiguration %q",
				it.in.GetName(), c.GetRouteKind(), c.GetRouteNamespace(), c.GetRouteName(), c.GetRuleIndex(), k.VirtualHost, k.RouteConfiguration),
			origins: ir.NewOrigins(objects.Ref{Kind: c.GetRouteKind(), Namespace: c.GetRouteNamespace(), Name: c.GetRouteName()}),
		}
		resp, ok := call(ru, HookPostRouteModify, about, it.req, ru.r.client.PostRouteModify,
			func(resp *v1alpha1.PostRouteModifyResponse) error {
				out := resp.GetRoute()
				if out == nil {
					return invalidf("no route (a route is dropped through PostVirtualHostModify)")
				}
				return ru.checkRoute(it.vh, it.key.Route, out)
			})
		if ok {
			changed[i] = resp.GetRoute()
		}
	})
	out := map[RouteKey]*routev3.Route{}
	for i, it := range items {
		if changed[i] != nil {
			out[it.key] = changed[i]
		}
	}
	return out
}

// modifyClusters runs PostClusterModify on each cluster of refs whose
// kind the extension owns, and returns the clusters, the changed ones
// replaced (a new list when one changed).
func (ru *run) modifyClusters(cs []proto.Message, refs map[string]*ir.ExtensionResource) []proto.Message {
	var idx []int
	for i, m := range cs {
		if x := refs[translator.ResourceName(m)]; x != nil && ru.r.reg.Owns(schema.GroupKind{Group: x.Group, Kind: x.Kind}) {
			idx = append(idx, i)
		}
	}
	changed := make([]*clusterv3.Cluster, len(idx))
	ru.each(len(idx), func(j int) {
		in := cs[idx[j]].(*clusterv3.Cluster)
		x := refs[in.GetName()]
		about := subject{resource: fmt.Sprintf("Cluster %q (%s)", in.GetName(), schema.GroupKind{Group: x.Group, Kind: x.Kind}),
			typeURL: resourcev3.ClusterType, names: []string{in.GetName()}}
		req := &v1alpha1.PostClusterModifyRequest{
			Cluster: in,
			Backend: &v1alpha1.ExtensionResource{UnstructuredJson: x.JSON},
			Context: &v1alpha1.ClusterContext{Origins: objectRefs(about.originsIn(ru.index))},
		}
		resp, ok := call(ru, HookPostClusterModify, about, req, ru.r.client.PostClusterModify,
			func(resp *v1alpha1.PostClusterModifyResponse) error {
				out := resp.GetCluster()
				switch {
				case out == nil:
					return invalidf("no cluster (PostClusterModify completes the cluster; it cannot drop it)")
				case out.GetName() != in.GetName():
					return invalidf("the cluster's name changed from %q to %q", in.GetName(), out.GetName())
				}
				if err := validate(out); err != nil {
					return invalidf("%v", err)
				}
				return ru.checkEndpoints([]*clusterv3.Cluster{out})
			})
		if ok {
			changed[j] = resp.GetCluster()
		}
	})
	var out []proto.Message
	for j, i := range idx {
		if changed[j] == nil {
			continue
		}
		if out == nil {
			out = append([]proto.Message(nil), cs...)
		}
		out[i] = changed[j]
	}
	if out == nil {
		return cs
	}
	return out
}

// hostnames are the host names a virtual host serves: its domains without
// the "host:*" variants the translator adds (for clients that send a
// port).
func hostnames(vh *routev3.VirtualHost) []string {
	out := make([]string, 0, len(vh.GetDomains()))
	for _, d := range vh.GetDomains() {
		if !strings.HasSuffix(d, ":*") {
			out = append(out, d)
		}
	}
	return out
}

// routeRequest is the PostRouteModify request of route rt of virtual
// host vh, or nil when ext holds no resource of the extension.
func (ru *run) routeRequest(rt *routev3.Route, ext *ir.RouteExtension, vh *routev3.VirtualHost) *v1alpha1.PostRouteModifyRequest {
	if ext == nil {
		return nil
	}
	rs := ru.owned(ext.Resources)
	if len(rs) == 0 {
		return nil
	}
	return &v1alpha1.PostRouteModifyRequest{
		Route: rt,
		Context: &v1alpha1.RouteContext{
			RouteKind: ext.Kind, RouteNamespace: ext.Namespace, RouteName: ext.Name,
			Hostnames: hostnames(vh), RuleName: ext.RuleName, RuleIndex: ruleIndex(ext.RuleIndex),
		},
		ExtensionResources: rs,
	}
}

// owned are the resources of xs of a kind the extension owns, as the
// contract has them.
func (ru *run) owned(xs []ir.ExtensionResource) []*v1alpha1.ExtensionResource {
	var out []*v1alpha1.ExtensionResource
	for _, x := range xs {
		if ru.r.reg.Owns(schema.GroupKind{Group: x.Group, Kind: x.Kind}) {
			out = append(out, &v1alpha1.ExtensionResource{UnstructuredJson: x.JSON, Policy: x.Policy})
		}
	}
	return out
}

// ruleIndex is the index of a rule in spec.rules as the API has it: an
// index of a Go slice, never negative, and far below 2^32 (the Gateway
// API allows 16 rules).
func ruleIndex(i int) uint32 {
	if i < 0 || int64(i) > math.MaxUint32 {
		panic(fmt.Sprintf("extension: rule index %d out of range", i))
	}
	return uint32(i)
}

// modifyVirtualHosts puts the changed routes in their virtual hosts and
// runs PostVirtualHostModify (when subscribed) on every virtual host; it
// returns the route configurations, new where one changed.
func (ru *run) modifyVirtualHosts(rcs []proto.Message, routes map[RouteKey]*routev3.Route) []proto.Message {
	subscribed := ru.r.reg.Subscribed(HookPostVirtualHostModify)
	items := ru.virtualHostItems(rcs, routes, subscribed)
	if subscribed {
		ru.each(len(items), func(i int) { ru.modifyVirtualHost(rcs, items[i]) })
	}
	out := append([]proto.Message(nil), rcs...)
	for len(items) > 0 {
		// The items of one route configuration are consecutive.
		n := 1
		for n < len(items) && items[n].rc == items[0].rc {
			n++
		}
		if rc := ru.rebuiltRouteConfiguration(rcs[items[0].rc].(*routev3.RouteConfiguration), items[:n]); rc != nil {
			out[items[0].rc] = rc
		}
		items = items[n:]
	}
	return out
}

// vhostItem is one virtual host of modifyVirtualHosts.
type vhostItem struct {
	rc, vh int
	in     *routev3.VirtualHost
	out    *routev3.VirtualHost // nil: dropped
	// overridden: in has routes PostRouteModify changed (not the
	// translator's, so without a version).
	overridden bool
	// passed: the answer passed in through; key is its request's.
	passed bool
	key    cacheKey
}

// virtualHostItems are the virtual hosts of the route configurations, with
// the changed routes in them (in a copy of their host), route
// configuration by route configuration; but for the configurations
// passedAgain (when subscribed) whose routes did not change.
func (ru *run) virtualHostItems(rcs []proto.Message, routes map[RouteKey]*routev3.Route, subscribed bool) []*vhostItem {
	var items []*vhostItem
	for i, m := range rcs {
		rc, ok := m.(*routev3.RouteConfiguration)
		if !ok {
			continue
		}
		first := len(items)
		overridden := false
		for j, vh := range rc.GetVirtualHosts() {
			in := withRoutes(vh, rc.GetName(), routes)
			overridden = overridden || in != vh
			items = append(items, &vhostItem{rc: i, vh: j, in: in, out: in, overridden: in != vh})
		}
		if subscribed && !overridden && ru.passedAgain(rc) {
			items = items[:first]
		}
	}
	return items
}

// withRoutes is vh with the changed routes of routes (a copy), or vh
// itself when none of its routes changed.
func withRoutes(vh *routev3.VirtualHost, rcName string, routes map[RouteKey]*routev3.Route) *routev3.VirtualHost {
	in := vh
	for ri := range vh.GetRoutes() {
		if r, ok := routes[RouteKey{rcName, vh.GetName(), ri}]; ok {
			if in == vh {
				in = translator.ShallowClone(vh)
				in.Routes = append([]*routev3.Route(nil), vh.GetRoutes()...)
			}
			in.Routes[ri] = r
		}
	}
	return in
}

// modifyVirtualHost calls PostVirtualHostModify on the item's virtual
// host, setting its out (and passed) from a valid answer.
func (ru *run) modifyVirtualHost(rcs []proto.Message, it *vhostItem) {
	rcName := translator.ResourceName(rcs[it.rc])
	about := subject{
		resource: fmt.Sprintf("virtual host %q of RouteConfiguration %q", it.in.GetName(), rcName),
		typeURL:  resourcev3.RouteType, names: []string{rcName}, vhost: it.in.GetName(),
	}
	origins := objectRefs(about.originsIn(ru.index))
	// The request is the virtual host (its routes are the translator's
	// messages, reused while its host is unchanged) and its origins.
	if !it.overridden {
		about.identity = vhostIdentity(it.in, ru.versions.Routes(rcName, it.in.GetName()), originsKey(origins))
	}
	req := &v1alpha1.PostVirtualHostModifyRequest{
		VirtualHost: it.in,
		Context:     &v1alpha1.VirtualHostContext{Origins: origins},
	}
	resp, key, ok := callKeyed(ru, HookPostVirtualHostModify, about, req, ru.r.client.PostVirtualHostModify,
		func(resp *v1alpha1.PostVirtualHostModifyResponse, key cacheKey) error {
			if resp.GetVirtualHost() == nil {
				return nil // dropped
			}
			if ru.passThrough(key, resp.GetVirtualHost(), it.in) {
				return nil
			}
			return ru.checkVirtualHost(it.in, resp.GetVirtualHost())
		})
	if ok {
		it.out = resp.GetVirtualHost()
		if it.out != nil && ru.passThrough(key, it.out, it.in) {
			it.out, it.passed, it.key = it.in, true, key
		}
	}
}

// rebuiltRouteConfiguration is orig with the virtual hosts of its items
// (of) in place of its own, or nil when they are its own: then, when every
// host was passed through, it is remembered for passedAgain.
func (ru *run) rebuiltRouteConfiguration(orig *routev3.RouteConfiguration, of []*vhostItem) *routev3.RouteConfiguration {
	same := true
	for _, it := range of {
		same = same && it.out == orig.GetVirtualHosts()[it.vh]
	}
	if same {
		ru.rememberPassed(orig, of)
		return nil
	}
	rc := translator.ShallowClone(orig)
	rc.VirtualHosts = make([]*routev3.VirtualHost, 0, len(of))
	for _, it := range of {
		if it.out != nil {
			rc.VirtualHosts = append(rc.VirtualHosts, it.out)
		}
	}
	return rc
}

// rememberPassed keeps, for passedAgain, the cache keys of the requests of
// a route configuration whose every virtual host was passed through.
func (ru *run) rememberPassed(orig *routev3.RouteConfiguration, of []*vhostItem) {
	keys := make([]cacheKey, 0, len(of))
	for _, it := range of {
		if !it.passed {
			return
		}
		keys = append(keys, it.key)
	}
	if v := ru.versions.RouteConfiguration(orig.GetName()); len(keys) > 0 && v != 0 {
		ru.mu.Lock()
		ru.passed[v] = passedConfig{orig.GetName(), keys}
		ru.mu.Unlock()
	}
}

// passedAgain reports whether rc is a route configuration of the last
// Apply whose every virtual host the extension passed through, and if so
// counts its hosts' calls as answered from the cache and keeps their
// answers for the next Apply. The translator hands over the same message
// for an unchanged TLS host (translator.Cache), with the same version
// (translator.Versions.RouteConfiguration): the same version (and name) is
// the same virtual hosts with the same routes and origins (both are of
// the host's model, which did not change), so the same requests, whose
// answers are known. The thousands of unchanged hosts of a change then
// cost a map lookup each instead of encoding and hashing their requests.
// The last Apply's cache holds each host's answer (call put it there);
// one missing (never expected) makes the hosts go through call, which
// puts in this Apply's maps what is put here.
func (ru *run) passedAgain(rc *routev3.RouteConfiguration) bool {
	v := ru.versions.RouteConfiguration(rc.GetName())
	p, ok := ru.r.passed[v]
	if v == 0 || !ok || p.name != rc.GetName() {
		return false
	}
	for _, key := range p.keys {
		if _, ok := ru.r.cache[key]; !ok {
			return false
		}
	}
	ru.mu.Lock()
	defer ru.mu.Unlock()
	for _, key := range p.keys {
		ru.used[key] = ru.r.cache[key]
		ru.same[key] = true
	}
	ru.passed[v] = p
	ru.r.calls.WithLabelValues(string(HookPostVirtualHostModify), string(OutcomeCached)).Add(float64(len(p.keys)))
	ru.n.Add(int64(len(p.keys)))
	return true
}

// listenerIdentity is the identity of a PostHTTPListenerModify request:
// the listener's own fields, its filter chains (each by its version,
// translator.Versions.Chain, or else encoded: those without one are
// small), and its Gateways (origins). The translator hands over the same
// filter chain, with the same version, while its host is unchanged: the
// HTTPS listener of 10,000 hosts is then known without encoding its
// megabytes again. Nil (no identity: the request is encoded) when a part
// cannot be encoded.
func listenerIdentity(in *listenerv3.Listener, versions *translator.Versions, origins string) any {
	own := translator.ShallowClone(in)
	own.FilterChains = nil
	var k strings.Builder
	if !identityOf(&k, own, origins) {
		return nil
	}
	for _, c := range in.GetFilterChains() {
		if v := versions.Chain(in.GetName(), c.GetName()); v != 0 {
			k.WriteString(strconv.FormatUint(v, 36))
		} else if !writeSum(&k, c) {
			return nil
		}
		k.WriteByte(',')
	}
	return contentKey(k.String())
}

// vhostIdentity is the identity of a PostVirtualHostModify request: the
// virtual host's own fields (its name and domains), the version of its
// routes (translator.Versions.Routes), and its origins. The translator
// makes a new virtual host message on every translation, but reuses an
// unchanged host's routes, with their version. Nil (no identity: the
// request is encoded) without a version.
func vhostIdentity(in *routev3.VirtualHost, routes uint64, origins string) any {
	if routes == 0 {
		return nil
	}
	own := translator.ShallowClone(in)
	own.Routes = nil
	var k strings.Builder
	if !identityOf(&k, own, origins) {
		return nil
	}
	k.WriteString(strconv.FormatUint(routes, 36))
	return contentKey(k.String())
}

// identityOf begins identity k: own (a message without its big parts)
// encoded and hashed, then extra (its context).
func identityOf(k *strings.Builder, own proto.Message, extra string) bool {
	if !writeSum(k, own) {
		return false
	}
	k.WriteString(extra)
	k.WriteByte(0)
	return true
}

// writeSum writes the hash of m's deterministic encoding to k, or reports
// that m cannot be encoded.
func writeSum(k *strings.Builder, m proto.Message) bool {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return false
	}
	sum := sha256.Sum256(b)
	k.Write(sum[:])
	return true
}

// resourcesKey encodes extension resources as one comparable string: the
// hashes of their JSON.
func resourcesKey(rs []*v1alpha1.ExtensionResource) string {
	var b strings.Builder
	for _, r := range rs {
		sum := sha256.Sum256(r.GetUnstructuredJson())
		b.Write(sum[:])
	}
	return b.String()
}

// contentKey is an identity (listenerIdentity, vhostIdentity).
type contentKey string

// originsKey encodes object references as one comparable string.
func originsKey(refs []*v1alpha1.ObjectRef) string {
	var b strings.Builder
	for _, r := range refs {
		// NUL is in no kind or name.
		b.WriteString(r.GetKind())
		b.WriteByte(0)
		b.WriteString(r.GetNamespace())
		b.WriteByte(0)
		b.WriteString(r.GetName())
		b.WriteByte(0)
	}
	return b.String()
}

// modifyListeners runs PostHTTPListenerModify on every listener with an
// HTTP connection manager; rcs are the route configurations its HCMs may
// use.
func (ru *run) modifyListeners(ls, rcs []proto.Message) []proto.Message {
	rcList := typed[*routev3.RouteConfiguration](rcs)
	outs := make([]proto.Message, len(ls))
	keep := make([]bool, len(ls))
	ru.each(len(ls), func(i int) {
		outs[i], keep[i] = ls[i], true
		in, ok := ls[i].(*listenerv3.Listener)
		if !ok || !hasHCM(in) {
			return
		}
		about := subject{resource: fmt.Sprintf("Listener %q", in.GetName()), typeURL: resourcev3.ListenerType, names: []string{in.GetName()}}
		var gateways ir.Origins
		for _, o := range about.originsIn(ru.index) {
			if o.Kind == objects.KindGateway {
				gateways = append(gateways, o)
			}
		}
		req := &v1alpha1.PostHTTPListenerModifyRequest{Listener: in, Context: &v1alpha1.HTTPListenerContext{
			Origins: objectRefs(gateways), ExtensionResources: ru.owned(ru.refs.Listeners[in.GetName()])}}
		about.identity = listenerIdentity(in, ru.versions, originsKey(req.GetContext().GetOrigins())+resourcesKey(req.GetContext().GetExtensionResources()))
		resp, key, ok := callKeyed(ru, HookPostHTTPListenerModify, about, req, ru.r.client.PostHTTPListenerModify,
			func(resp *v1alpha1.PostHTTPListenerModifyResponse, key cacheKey) error {
				if resp.GetListener() == nil {
					return nil // dropped
				}
				if ru.passThrough(key, resp.GetListener(), in) {
					return nil
				}
				return ru.checkListener(in, resp.GetListener(), rcList)
			})
		if ok {
			if l := resp.GetListener(); l != nil {
				if !ru.passThrough(key, l, in) {
					outs[i] = l
				}
			} else {
				keep[i] = false
			}
		}
	})
	out := make([]proto.Message, 0, len(ls))
	for i, m := range outs {
		if keep[i] {
			out = append(out, m)
		}
	}
	return out
}

// modifyAll runs PostTranslateModify on the whole configuration.
func (ru *run) modifyAll(out *translator.Resources) {
	req := &v1alpha1.PostTranslateModifyRequest{
		Clusters:            typed[*clusterv3.Cluster](out.Clusters),
		Secrets:             typed[*tlsv3.Secret](out.Secrets),
		Listeners:           typed[*listenerv3.Listener](out.Listeners),
		RouteConfigurations: typed[*routev3.RouteConfiguration](out.Routes),
		ExtensionPolicies:   ru.owned(ru.refs.Policies),
	}
	about := subject{resource: "the configuration (every cluster, secret, listener and route configuration)"}
	resp, ok := call(ru, HookPostTranslateModify, about, req, ru.r.client.PostTranslateModify,
		func(resp *v1alpha1.PostTranslateModifyResponse) error { return ru.checkAll(req, resp) })
	if !ok {
		return
	}
	out.Clusters = appendSorted(nil, resp.GetClusters())
	out.Secrets = appendSorted(nil, resp.GetSecrets())
	out.Listeners = appendSorted(nil, resp.GetListeners())
	out.Routes = appendSorted(nil, resp.GetRouteConfigurations())
	// Endpoints go with their clusters.
	clusters := namesOf(out.Clusters)
	var eps []proto.Message
	for _, e := range out.Endpoints {
		if clusters[translator.ResourceName(e)] {
			eps = append(eps, e)
		}
	}
	out.Endpoints = eps
}

// keepsSomething reports whether a hook's answers, which left after of the
// before resources the phase was given, keep at least one, or the
// extension declared it may remove them all (MayRemoveAll); else it is a
// failure of the hook and the phase's change is not taken. Envoy serving
// nothing because of an answer is a choice to declare, not an accident.
func (ru *run) keepsSomething(hook Hook, what string, before, after int) bool {
	if before == 0 || after > 0 || ru.r.reg.MayRemoveAll {
		return true
	}
	ru.fail(hook, subject{resource: "the configuration (" + what + ")"}, OutcomeInvalid, codes.OK, "invalid answer: "+removesAll(what))
	return false
}

func removesAll(what string) string {
	return fmt.Sprintf("the answers remove %s: Envoy would serve nothing (an extension that means to says mayRemoveAll: true)", what)
}

// virtualHosts counts the virtual hosts of route configurations.
func virtualHosts(rcs []proto.Message) int {
	n := 0
	for _, m := range rcs {
		if rc, ok := m.(*routev3.RouteConfiguration); ok {
			n += len(rc.GetVirtualHosts())
		}
	}
	return n
}

// typed returns the messages of type M of ms.
func typed[M proto.Message](ms []proto.Message) []M {
	out := make([]M, 0, len(ms))
	for _, m := range ms {
		if t, ok := m.(M); ok {
			out = append(out, t)
		}
	}
	return out
}

// objectRefs converts origins to the contract's ObjectRefs.
func objectRefs(o ir.Origins) []*v1alpha1.ObjectRef {
	if len(o) == 0 {
		return nil
	}
	out := make([]*v1alpha1.ObjectRef, len(o))
	for i, r := range o {
		out[i] = &v1alpha1.ObjectRef{Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}
	}
	return out
}
