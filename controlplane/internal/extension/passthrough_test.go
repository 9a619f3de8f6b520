package extension

import (
	"context"
	"strings"
	"testing"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/portcullis/portcullis/controlplane/internal/translator"
	"github.com/portcullis/portcullis/extension/api/v1alpha1"
	"github.com/portcullis/portcullis/extension/sdk"
)

// A pass-through extension's output is the translator's own messages, so
// that an unchanged resource stays the same pointer from one rebuild to
// the next, as without an extension.
func TestPassThroughKeepsTheInput(t *testing.T) {
	addr, calls := serve(t, &sdk.Server{})
	r := newRunner(t, Registration{Address: addr, Hooks: []Hook{HookPostVirtualHostModify, HookPostHTTPListenerModify}})
	in := translate(t, fixtureYAML)
	for round := range 2 {
		out, failures := r.Apply(context.Background(), in, Refs{})
		if len(failures) > 0 {
			t.Fatalf("round %d: %v", round, failures)
		}
		for i := range in.Routes {
			if out.Routes[i] != in.Routes[i] {
				t.Errorf("round %d: route configuration %s is not the input's", round, translator.ResourceName(in.Routes[i]))
			}
		}
		for i := range in.Listeners {
			if out.Listeners[i] != in.Listeners[i] {
				t.Errorf("round %d: listener %s is not the input's", round, translator.ResourceName(in.Listeners[i]))
			}
		}
	}
	// The same messages again: answered from the cache (by identity).
	if n := calls.get(HookPostVirtualHostModify); n != 2 {
		t.Errorf("PostVirtualHostModify called %d times, want 2 (the first Apply's)", n)
	}
	if got := testutil.ToFloat64(r.calls.WithLabelValues(string(HookPostVirtualHostModify), string(OutcomeCached))); got != 2 {
		t.Errorf("cached PostVirtualHostModify: %v, want 2", got)
	}
}

// A request known by identity is never answered with the answer to
// another: a virtual host that changed is a new message (the translator
// never changes one it handed out), sent again, and its new answer is
// used; an unchanged one keeps its answer.
func TestIdentityNeverServesAStaleAnswer(t *testing.T) {
	addr, calls := serve(t, &sdk.Server{VirtualHostModify: vhostHeader})
	r := newRunner(t, Registration{Address: addr, Hooks: []Hook{HookPostVirtualHostModify}})
	apply := func(in *translator.Resources) *translator.Resources {
		t.Helper()
		out, failures := r.Apply(context.Background(), in, Refs{})
		if len(failures) > 0 {
			t.Fatal(failures)
		}
		return out
	}
	in := translate(t, fixtureYAML)
	apply(in)
	// The next translation reuses a.example.com's virtual host and has a
	// new b.example.com.
	changed := translate(t, strings.Replace(fixtureYAML, "prefix: /b}", "prefix: /bee}", 1))
	next := &translator.Resources{Listeners: changed.Listeners, Clusters: changed.Clusters, Endpoints: changed.Endpoints, Secrets: changed.Secrets, Index: changed.Index}
	for _, m := range changed.Routes {
		rc := m.(*routev3.RouteConfiguration)
		if rc.GetName() == translator.HTTPRouteConfigName {
			rc = proto.Clone(rc).(*routev3.RouteConfiguration)
			for i, vh := range rc.VirtualHosts {
				if vh.GetName() == "a.example.com" {
					rc.VirtualHosts[i] = vhost(in, "a.example.com")
				}
			}
		}
		next.Routes = append(next.Routes, rc)
	}
	out := apply(next)
	if n := calls.get(HookPostVirtualHostModify); n != 3 {
		t.Errorf("PostVirtualHostModify called %d times, want 3 (b.example.com again)", n)
	}
	b := vhost(out, "b.example.com")
	if !hasHeader(b.GetRequestHeadersToAdd(), "vhost") || b.GetRoutes()[0].GetMatch().GetPathSeparatedPrefix() != "/bee" {
		t.Errorf("b.example.com is not the answer to its new virtual host: %v", b)
	}
	if a := vhost(out, "a.example.com"); !hasHeader(a.GetRequestHeadersToAdd(), "vhost") || a.GetRoutes()[0].GetMatch().GetPathSeparatedPrefix() != "/a" {
		t.Errorf("a.example.com is not its cached answer: %v", a)
	}
}

// A listener is known by its own fields and its filter chains' messages:
// the same chains (the translator's, reused) in a new listener message
// reuse the answer without a call; a new chain, or a changed field of the
// listener's own, is sent again.
func TestListenerIdentity(t *testing.T) {
	addr, calls := serve(t, &sdk.Server{HTTPListenerModify: func(_ context.Context, req *v1alpha1.PostHTTPListenerModifyRequest) (*v1alpha1.PostHTTPListenerModifyResponse, error) {
		l := req.GetListener()
		l.PerConnectionBufferLimitBytes = wrapperspb.UInt32(uint32(1000 + len(l.GetFilterChains())))
		return &v1alpha1.PostHTTPListenerModifyResponse{Listener: l}, nil
	}})
	r := newRunner(t, Registration{Address: addr, Hooks: []Hook{HookPostHTTPListenerModify}})
	base := translate(t, fixtureYAML)
	orig := listener(base, translator.HTTPListenerName)
	chain := func(name string) *listenerv3.FilterChain {
		c := proto.Clone(orig.GetFilterChains()[0]).(*listenerv3.FilterChain)
		c.Name = name
		return c
	}
	c1, c2, c3 := chain("one"), chain("two"), chain("three")
	with := func(statPrefix string, chains ...*listenerv3.FilterChain) *listenerv3.Listener {
		l := translator.ShallowClone(orig)
		l.FilterChains, l.StatPrefix = chains, statPrefix
		return l
	}
	apply := func(l *listenerv3.Listener) *listenerv3.Listener {
		t.Helper()
		in := &translator.Resources{Listeners: []proto.Message{l}, Routes: base.Routes, Clusters: base.Clusters, Endpoints: base.Endpoints, Index: base.Index}
		out, failures := r.Apply(context.Background(), in, Refs{})
		if len(failures) > 0 {
			t.Fatal(failures)
		}
		return out.Listeners[0].(*listenerv3.Listener)
	}
	for i, step := range []struct {
		l     *listenerv3.Listener
		calls int
		limit uint32
	}{
		{with("a", c1, c2), 1, 1002},
		{with("a", c1, c2), 1, 1002},     // a new message, the same chains: the cached answer
		{with("a", c1, c3), 2, 1002},     // a new chain: sent
		{with("a", c1, c2, c3), 3, 1003}, // one more
		{with("b", c1, c2, c3), 4, 1003}, // the listener's own field
	} {
		out := apply(step.l)
		if n := calls.get(HookPostHTTPListenerModify); n != step.calls {
			t.Errorf("step %d: %d calls, want %d", i, n, step.calls)
		}
		if got := out.GetPerConnectionBufferLimitBytes().GetValue(); got != step.limit || len(out.GetFilterChains()) != len(step.l.GetFilterChains()) ||
			out.GetStatPrefix() != step.l.GetStatPrefix() {
			t.Errorf("step %d: answer %v (limit %d), not the answer to its request", i, out.GetFilterChains(), got)
		}
	}
}

// A route configuration message seen again, whose every virtual host the
// extension passed through, is known without encoding its requests; it
// stays known from one Apply to the next while it is handed over, and a
// configuration whose host the extension changed never is.
func TestPassedRouteConfigurations(t *testing.T) {
	in := translate(t, fixtureYAML)
	var rcs int
	for _, m := range in.Routes {
		if len(m.(*routev3.RouteConfiguration).GetVirtualHosts()) > 0 {
			rcs++
		}
	}
	for _, tc := range []struct {
		name   string
		server *sdk.Server
		want   int // route configurations known after each Apply
	}{
		{"pass-through", &sdk.Server{}, rcs},
		{"changes every host", &sdk.Server{VirtualHostModify: vhostHeader}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, calls := serve(t, tc.server)
			r := newRunner(t, Registration{Address: addr, Hooks: []Hook{HookPostVirtualHostModify}})
			for round := range 3 {
				if _, failures := r.Apply(context.Background(), in, Refs{}); len(failures) > 0 {
					t.Fatalf("round %d: %v", round, failures)
				}
				if len(r.passed) != tc.want {
					t.Errorf("round %d: %d route configurations known as passed through, want %d", round, len(r.passed), tc.want)
				}
			}
			if n := calls.get(HookPostVirtualHostModify); n != 2 {
				t.Errorf("PostVirtualHostModify called %d times, want 2 (the first Apply's)", n)
			}
			if got := testutil.ToFloat64(r.calls.WithLabelValues(string(HookPostVirtualHostModify), string(OutcomeCached))); got != 4 {
				t.Errorf("cached PostVirtualHostModify: %v, want 4", got)
			}
			// A new translation: new messages, equal; known again by
			// identity, then by message.
			if _, failures := r.Apply(context.Background(), translate(t, fixtureYAML), Refs{}); len(failures) > 0 {
				t.Fatal(failures)
			}
			if n := calls.get(HookPostVirtualHostModify); n != 2 {
				t.Errorf("PostVirtualHostModify called %d times after a new equal translation, want 2", n)
			}
			if len(r.passed) != tc.want {
				t.Errorf("after a new translation: %d route configurations known, want %d", len(r.passed), tc.want)
			}
		})
	}
}

// A route configuration known as passed through whose answers are no
// longer cached is not taken as known: its hosts are called again, and it
// is known again afterwards.
func TestPassedRouteConfigurationWithoutItsAnswers(t *testing.T) {
	in := translate(t, fixtureYAML)
	addr, calls := serve(t, &sdk.Server{})
	r := newRunner(t, Registration{Address: addr, Hooks: []Hook{HookPostVirtualHostModify}})
	if _, failures := r.Apply(context.Background(), in, Refs{}); len(failures) > 0 {
		t.Fatal(failures)
	}
	known, first := len(r.passed), calls.get(HookPostVirtualHostModify)
	if known == 0 || first == 0 {
		t.Fatalf("after the first Apply: %d route configurations known, %d calls", known, first)
	}
	r.cache = map[cacheKey]proto.Message{}
	out, failures := r.Apply(context.Background(), in, Refs{})
	if len(failures) > 0 {
		t.Fatal(failures)
	}
	if n := calls.get(HookPostVirtualHostModify); n != 2*first {
		t.Errorf("PostVirtualHostModify called %d times, want %d: the hosts without a cached answer are called again", n, 2*first)
	}
	if len(r.passed) != known {
		t.Errorf("%d route configurations known after the calls, want %d", len(r.passed), known)
	}
	for i, m := range out.Routes {
		if m != in.Routes[i] {
			t.Errorf("route configuration %d is not the translator's message", i)
		}
	}
}
