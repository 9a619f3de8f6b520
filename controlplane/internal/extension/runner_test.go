package extension

import (
	"context"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/translator"
	"github.com/portcullis/portcullis/extension/api/v1alpha1"
	"github.com/portcullis/portcullis/extension/sdk"
)

const ourCluster = "service/default/echo/80"

var (
	// refsA gives the route translate names (the one route of
	// a.example.com) a RetryPolicy, as the builder does for a rule with an
	// ExtensionRef filter.
	refsA = Refs{Routes: map[string]*ir.RouteExtension{routeAName: {
		Kind: "HTTPProxy", Namespace: "default", Name: "a",
		Resources: []ir.ExtensionResource{{Group: "example.vendor.io", Kind: "RetryPolicy",
			JSON: []byte(`{"apiVersion":"example.vendor.io/v1","kind":"RetryPolicy","metadata":{"name":"retry","namespace":"default"},"spec":{"attempts":3}}`)}},
	}}}
	proxyA = objects.Ref{Kind: objects.KindHTTPProxy, Namespace: "default", Name: "a"}
)

// header adds a request header to add, naming who added it.
func header(v string) []*corev3.HeaderValueOption {
	return []*corev3.HeaderValueOption{{Header: &corev3.HeaderValue{Key: "x-ext", Value: v}}}
}

func hasHeader(hs []*corev3.HeaderValueOption, v string) bool {
	for _, h := range hs {
		if h.GetHeader().GetKey() == "x-ext" && h.GetHeader().GetValue() == v {
			return true
		}
	}
	return false
}

// Lookups in Resources (nil when absent).
func routeConfig(r *translator.Resources, name string) *routev3.RouteConfiguration {
	for _, m := range r.Routes {
		if translator.ResourceName(m) == name {
			return m.(*routev3.RouteConfiguration)
		}
	}
	return nil
}

func vhost(r *translator.Resources, name string) *routev3.VirtualHost {
	for _, vh := range routeConfig(r, translator.HTTPRouteConfigName).GetVirtualHosts() {
		if vh.GetName() == name {
			return vh
		}
	}
	return nil
}

func listener(r *translator.Resources, name string) *listenerv3.Listener {
	for _, m := range r.Listeners {
		if translator.ResourceName(m) == name {
			return m.(*listenerv3.Listener)
		}
	}
	return nil
}

func cluster(r *translator.Resources, name string) *clusterv3.Cluster {
	for _, m := range r.Clusters {
		if translator.ResourceName(m) == name {
			return m.(*clusterv3.Cluster)
		}
	}
	return nil
}

// Extensions' answers used by several tests.
var (
	// routeHeader adds a header naming the route's resource.
	routeHeader = func(_ context.Context, req *v1alpha1.PostRouteModifyRequest) (*v1alpha1.PostRouteModifyResponse, error) {
		u, err := sdk.Unstructured(req.GetExtensionResources()[0])
		if err != nil {
			return nil, err
		}
		r := req.GetRoute()
		r.RequestHeadersToAdd = header("route/" + u.GetName())
		return &v1alpha1.PostRouteModifyResponse{Route: r}, nil
	}
	vhostHeader = func(_ context.Context, req *v1alpha1.PostVirtualHostModifyRequest) (*v1alpha1.PostVirtualHostModifyResponse, error) {
		vh := req.GetVirtualHost()
		vh.RequestHeadersToAdd = header("vhost")
		return &v1alpha1.PostVirtualHostModifyResponse{VirtualHost: vh}, nil
	}
	listenerBuffer = func(_ context.Context, req *v1alpha1.PostHTTPListenerModifyRequest) (*v1alpha1.PostHTTPListenerModifyResponse, error) {
		l := req.GetListener()
		l.PerConnectionBufferLimitBytes = wrapperspb.UInt32(1234)
		return &v1alpha1.PostHTTPListenerModifyResponse{Listener: l}, nil
	}
	sidecar = &clusterv3.Cluster{
		Name:                 "ext/sidecar",
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC},
	}
	insertSidecar = func(context.Context, *v1alpha1.PostTranslateInsertRequest) (*v1alpha1.PostTranslateInsertResponse, error) {
		return &v1alpha1.PostTranslateInsertResponse{
			Clusters: []*clusterv3.Cluster{sidecar},
			Secrets:  []*tlsv3.Secret{{Name: "ext/token", Type: &tlsv3.Secret_GenericSecret{GenericSecret: &tlsv3.GenericSecret{Secret: &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: "t"}}}}}},
		}, nil
	}
	modifyTimeouts = func(_ context.Context, req *v1alpha1.PostTranslateModifyRequest) (*v1alpha1.PostTranslateModifyResponse, error) {
		for _, c := range req.GetClusters() {
			c.ConnectTimeout = durationpb.New(5 * time.Second)
		}
		return &v1alpha1.PostTranslateModifyResponse{Clusters: req.GetClusters(), Secrets: req.GetSecrets(), Listeners: req.GetListeners(), RouteConfigurations: req.GetRouteConfigurations()}, nil
	}
)

func TestEachHookAppliesItsChange(t *testing.T) {
	tests := []struct {
		name  string
		hooks []Hook
		ext   *sdk.Server
		calls map[Hook]int
		check func(t *testing.T, out *translator.Resources)
	}{{
		name: "PostRouteModify", hooks: []Hook{HookPostRouteModify}, ext: &sdk.Server{RouteModify: routeHeader},
		calls: map[Hook]int{HookPostRouteModify: 1},
		check: func(t *testing.T, out *translator.Resources) {
			if r := vhost(out, "a.example.com").GetRoutes()[0]; !hasHeader(r.GetRequestHeadersToAdd(), "route/retry") {
				t.Errorf("route of a.example.com not modified: %v", r)
			}
			if r := vhost(out, "b.example.com").GetRoutes()[0]; len(r.GetRequestHeadersToAdd()) != 0 {
				t.Errorf("route of b.example.com (not in refs) modified: %v", r)
			}
		},
	}, {
		name: "PostVirtualHostModify sees the routes PostRouteModify changed", hooks: []Hook{HookPostRouteModify, HookPostVirtualHostModify},
		ext:   &sdk.Server{RouteModify: routeHeader, VirtualHostModify: vhostHeader},
		calls: map[Hook]int{HookPostRouteModify: 1, HookPostVirtualHostModify: 2},
		check: func(t *testing.T, out *translator.Resources) {
			for _, n := range []string{"a.example.com", "b.example.com"} {
				if vh := vhost(out, n); !hasHeader(vh.GetRequestHeadersToAdd(), "vhost") {
					t.Errorf("virtual host %s not modified: %v", n, vh)
				}
			}
			if r := vhost(out, "a.example.com").GetRoutes()[0]; !hasHeader(r.GetRequestHeadersToAdd(), "route/retry") {
				t.Errorf("the route's change was lost: %v", r)
			}
		},
	}, {
		name: "PostVirtualHostModify drops a virtual host", hooks: []Hook{HookPostVirtualHostModify},
		ext: &sdk.Server{VirtualHostModify: func(_ context.Context, req *v1alpha1.PostVirtualHostModifyRequest) (*v1alpha1.PostVirtualHostModifyResponse, error) {
			if req.GetVirtualHost().GetName() == "b.example.com" {
				return &v1alpha1.PostVirtualHostModifyResponse{}, nil
			}
			return &v1alpha1.PostVirtualHostModifyResponse{VirtualHost: req.GetVirtualHost()}, nil
		}},
		calls: map[Hook]int{HookPostVirtualHostModify: 2},
		check: func(t *testing.T, out *translator.Resources) {
			if vhost(out, "b.example.com") != nil || vhost(out, "a.example.com") == nil {
				t.Errorf("want only a.example.com: %v", routeConfig(out, translator.HTTPRouteConfigName))
			}
		},
	}, {
		name: "PostHTTPListenerModify", hooks: []Hook{HookPostHTTPListenerModify}, ext: &sdk.Server{HTTPListenerModify: listenerBuffer},
		calls: map[Hook]int{HookPostHTTPListenerModify: 1},
		check: func(t *testing.T, out *translator.Resources) {
			if l := listener(out, translator.HTTPListenerName); l.GetPerConnectionBufferLimitBytes().GetValue() != 1234 {
				t.Errorf("listener not modified: %v", l)
			}
		},
	}, {
		name: "PostTranslateInsert, and a route sends to the inserted cluster", hooks: []Hook{HookPostTranslateInsert, HookPostRouteModify},
		ext: &sdk.Server{TranslateInsert: insertSidecar, RouteModify: func(_ context.Context, req *v1alpha1.PostRouteModifyRequest) (*v1alpha1.PostRouteModifyResponse, error) {
			r := req.GetRoute()
			r.GetRoute().ClusterSpecifier = &routev3.RouteAction_Cluster{Cluster: sidecar.GetName()}
			return &v1alpha1.PostRouteModifyResponse{Route: r}, nil
		}},
		calls: map[Hook]int{HookPostTranslateInsert: 1, HookPostRouteModify: 1},
		check: func(t *testing.T, out *translator.Resources) {
			if cluster(out, sidecar.GetName()) == nil || cluster(out, ourCluster) == nil || len(out.Secrets) != 1 {
				t.Errorf("want ours and the sidecar's clusters, and one secret: %v %v", out.Clusters, out.Secrets)
			}
			if c := vhost(out, "a.example.com").GetRoutes()[0].GetRoute().GetCluster(); c != sidecar.GetName() {
				t.Errorf("route sends to %q", c)
			}
		},
	}, {
		name: "PostTranslateModify", hooks: []Hook{HookPostTranslateModify}, ext: &sdk.Server{TranslateModify: modifyTimeouts},
		calls: map[Hook]int{HookPostTranslateModify: 1},
		check: func(t *testing.T, out *translator.Resources) {
			if c := cluster(out, ourCluster); c.GetConnectTimeout().AsDuration() != 5*time.Second {
				t.Errorf("cluster not modified: %v", c)
			}
			if len(out.Endpoints) != 1 || len(out.Listeners) != 1 || len(out.Routes) != 1 {
				t.Errorf("resources lost: %v", out)
			}
		},
	}, {
		name:  "every hook, pass-through",
		hooks: []Hook{HookPostTranslateInsert, HookPostRouteModify, HookPostVirtualHostModify, HookPostHTTPListenerModify, HookPostTranslateModify},
		ext:   &sdk.Server{},
		calls: map[Hook]int{HookPostTranslateInsert: 1, HookPostRouteModify: 1, HookPostVirtualHostModify: 2, HookPostHTTPListenerModify: 1, HookPostTranslateModify: 1},
		check: func(t *testing.T, out *translator.Resources) {
			in := translate(t, fixtureYAML)
			for i, l := range [][2][]proto.Message{{in.Listeners, out.Listeners}, {in.Routes, out.Routes}, {in.Clusters, out.Clusters}, {in.Endpoints, out.Endpoints}, {in.Secrets, out.Secrets}} {
				if len(l[0]) != len(l[1]) {
					t.Fatalf("list %d: %d resources, want %d", i, len(l[1]), len(l[0]))
				}
				for j := range l[0] {
					if !proto.Equal(l[0][j], l[1][j]) {
						t.Errorf("pass-through changed %s", translator.ResourceName(l[0][j]))
					}
				}
			}
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			addr, calls := serve(t, tc.ext)
			r := newRunner(t, Registration{Address: addr, Hooks: tc.hooks})
			in := translate(t, fixtureYAML)
			f := freeze(in)
			out, failures := r.Apply(context.Background(), in, refsA)
			if len(failures) > 0 {
				t.Fatalf("failures: %v", failures)
			}
			f.check(t)
			tc.check(t, out)
			for _, h := range Hooks {
				if got := calls.get(h); got != tc.calls[h] {
					t.Errorf("%s called %d times, want %d", h, got, tc.calls[h])
				}
			}
		})
	}
}

func TestUnsubscribedHooksAreNotCalled(t *testing.T) {
	// The extension would break every hook; only the listener's is
	// subscribed.
	broken := func() error { return status.Error(codes.Internal, "broken") }
	addr, calls := serve(t, &sdk.Server{
		RouteModify: func(context.Context, *v1alpha1.PostRouteModifyRequest) (*v1alpha1.PostRouteModifyResponse, error) {
			return nil, broken()
		},
		VirtualHostModify: func(context.Context, *v1alpha1.PostVirtualHostModifyRequest) (*v1alpha1.PostVirtualHostModifyResponse, error) {
			return nil, broken()
		},
		TranslateInsert: func(context.Context, *v1alpha1.PostTranslateInsertRequest) (*v1alpha1.PostTranslateInsertResponse, error) {
			return nil, broken()
		},
		TranslateModify: func(context.Context, *v1alpha1.PostTranslateModifyRequest) (*v1alpha1.PostTranslateModifyResponse, error) {
			return nil, broken()
		},
		HTTPListenerModify: listenerBuffer,
	})
	r := newRunner(t, Registration{Address: addr, Hooks: []Hook{HookPostHTTPListenerModify}})
	out, failures := r.Apply(context.Background(), translate(t, fixtureYAML), refsA)
	if len(failures) > 0 || out == nil {
		t.Fatalf("failures: %v", failures)
	}
	if calls.total() != 1 || calls.get(HookPostHTTPListenerModify) != 1 {
		t.Errorf("calls: %v, want one PostHTTPListenerModify", calls.n)
	}
}

// failing are extensions that fail one hook for a.example.com (its route,
// its virtual host), or the whole configuration, and change b.example.com's
// virtual host, so that what FailOpen keeps shows.
func TestFailures(t *testing.T) {
	vhostA := func(f func(vh *routev3.VirtualHost) (*routev3.VirtualHost, error)) func(context.Context, *v1alpha1.PostVirtualHostModifyRequest) (*v1alpha1.PostVirtualHostModifyResponse, error) {
		return func(ctx context.Context, req *v1alpha1.PostVirtualHostModifyRequest) (*v1alpha1.PostVirtualHostModifyResponse, error) {
			vh := req.GetVirtualHost()
			if vh.GetName() != "a.example.com" {
				return vhostHeader(ctx, req)
			}
			vh, err := f(vh)
			return &v1alpha1.PostVirtualHostModifyResponse{VirtualHost: vh}, err
		}
	}
	routeTo := func(cluster string) func(context.Context, *v1alpha1.PostRouteModifyRequest) (*v1alpha1.PostRouteModifyResponse, error) {
		return func(_ context.Context, req *v1alpha1.PostRouteModifyRequest) (*v1alpha1.PostRouteModifyResponse, error) {
			r := req.GetRoute()
			r.GetRoute().ClusterSpecifier = &routev3.RouteAction_Cluster{Cluster: cluster}
			return &v1alpha1.PostRouteModifyResponse{Route: r}, nil
		}
	}
	tests := []struct {
		name    string
		ext     *sdk.Server
		hooks   []Hook
		timeout time.Duration
		// want is the failure (Message: a part of it).
		want Failure
		// aKept: a.example.com is served as translated under FailOpen.
		aKept bool
	}{{
		name:  "error status",
		hooks: []Hook{HookPostRouteModify, HookPostVirtualHostModify},
		ext: &sdk.Server{VirtualHostModify: vhostHeader, RouteModify: func(context.Context, *v1alpha1.PostRouteModifyRequest) (*v1alpha1.PostRouteModifyResponse, error) {
			return nil, status.Error(codes.FailedPrecondition, "no such RetryPolicy")
		}},
		want: Failure{Hook: HookPostRouteModify, Outcome: OutcomeError, Code: codes.FailedPrecondition, Message: "no such RetryPolicy", Origins: ir.Origins{proxyA}},
	}, {
		name:    "deadline exceeded",
		hooks:   []Hook{HookPostVirtualHostModify},
		timeout: 100 * time.Millisecond,
		ext: &sdk.Server{VirtualHostModify: vhostA(func(vh *routev3.VirtualHost) (*routev3.VirtualHost, error) {
			time.Sleep(400 * time.Millisecond)
			return vh, nil
		})},
		want:  Failure{Hook: HookPostVirtualHostModify, Outcome: OutcomeTimeout, Code: codes.DeadlineExceeded, Message: "within the timeout", Origins: ir.Origins{proxyA}},
		aKept: true,
	}, {
		name:  "invalid proto",
		hooks: []Hook{HookPostVirtualHostModify},
		ext: &sdk.Server{VirtualHostModify: vhostA(func(vh *routev3.VirtualHost) (*routev3.VirtualHost, error) {
			vh.Routes = append(vh.Routes, &routev3.Route{}) // no match, no action
			return vh, nil
		})},
		want:  Failure{Hook: HookPostVirtualHostModify, Outcome: OutcomeInvalid, Code: codes.OK, Message: "does not validate", Origins: ir.Origins{proxyA}},
		aKept: true,
	}, {
		name:  "renamed virtual host",
		hooks: []Hook{HookPostVirtualHostModify},
		ext: &sdk.Server{VirtualHostModify: vhostA(func(vh *routev3.VirtualHost) (*routev3.VirtualHost, error) {
			vh.Name = "other"
			return vh, nil
		})},
		want:  Failure{Hook: HookPostVirtualHostModify, Outcome: OutcomeInvalid, Message: `name changed from "a.example.com" to "other"`, Origins: ir.Origins{proxyA}},
		aKept: true,
	}, {
		name:  "dangling cluster",
		hooks: []Hook{HookPostRouteModify, HookPostVirtualHostModify},
		ext:   &sdk.Server{VirtualHostModify: vhostHeader, RouteModify: routeTo("nope")},
		want:  Failure{Hook: HookPostRouteModify, Outcome: OutcomeInvalid, Message: `cluster "nope", which does not exist`, Origins: ir.Origins{proxyA}},
	}, {
		name:  "inserted cluster takes our name",
		hooks: []Hook{HookPostTranslateInsert, HookPostVirtualHostModify},
		ext: &sdk.Server{VirtualHostModify: vhostHeader, TranslateInsert: func(context.Context, *v1alpha1.PostTranslateInsertRequest) (*v1alpha1.PostTranslateInsertResponse, error) {
			return &v1alpha1.PostTranslateInsertResponse{Clusters: []*clusterv3.Cluster{{Name: ourCluster}}}, nil
		}},
		want: Failure{Hook: HookPostTranslateInsert, Outcome: OutcomeInvalid, Message: "the name of one of Portcullis's"},
	}, {
		name:  "PostTranslateModify removes a cluster a route uses",
		hooks: []Hook{HookPostTranslateModify, HookPostVirtualHostModify},
		ext: &sdk.Server{VirtualHostModify: vhostHeader, TranslateModify: func(_ context.Context, req *v1alpha1.PostTranslateModifyRequest) (*v1alpha1.PostTranslateModifyResponse, error) {
			return &v1alpha1.PostTranslateModifyResponse{Secrets: req.GetSecrets(), Listeners: req.GetListeners(), RouteConfigurations: req.GetRouteConfigurations()}, nil
		}},
		want: Failure{Hook: HookPostTranslateModify, Outcome: OutcomeInvalid, Message: `cluster "service/default/echo/80", which does not exist`,
			Origins: ir.Origins{proxyA, {Kind: objects.KindHTTPProxy, Namespace: "default", Name: "b"}}},
	}}
	for _, tc := range tests {
		for _, policy := range []FailurePolicy{FailClosed, FailOpen} {
			t.Run(tc.name+"/"+string(policy), func(t *testing.T) {
				addr, _ := serve(t, tc.ext)
				r := newRunner(t, Registration{Address: addr, Hooks: tc.hooks, FailurePolicy: policy, Timeout: tc.timeout})
				in := translate(t, fixtureYAML)
				f := freeze(in)
				out, failures := r.Apply(context.Background(), in, refsA)
				f.check(t)
				if len(failures) != 1 {
					t.Fatalf("failures: %v, want one", failures)
				}
				got := failures[0]
				if got.Hook != tc.want.Hook || got.Outcome != tc.want.Outcome || got.Code != tc.want.Code ||
					!strings.Contains(got.Message, tc.want.Message) || !equalOrigins(got.Origins, tc.want.Origins) || got.Resource == "" {
					t.Errorf("failure:\n%#v\nwant (message containing):\n%#v", got, tc.want)
				}
				if policy == FailClosed {
					if out != nil {
						t.Errorf("FailClosed returned resources to publish")
					}
					return
				}
				if out == nil {
					t.Fatal("FailOpen returned nothing to publish")
				}
				// The rest applies: b's virtual host changed.
				if vh := vhost(out, "b.example.com"); !hasHeader(vh.GetRequestHeadersToAdd(), "vhost") {
					t.Errorf("FailOpen: b.example.com's change not applied: %v", vh)
				}
				if tc.aKept && !proto.Equal(vhost(out, "a.example.com"), vhost(in, "a.example.com")) {
					t.Errorf("FailOpen: a.example.com not as translated: %v", vhost(out, "a.example.com"))
				}
				if c := vhost(out, "a.example.com").GetRoutes()[0].GetRoute().GetCluster(); c != ourCluster {
					t.Errorf("FailOpen: a's route sends to %q", c)
				}
				if len(out.Clusters) != 1 || cluster(out, ourCluster) == nil {
					t.Errorf("FailOpen: clusters %v", out.Clusters)
				}
			})
		}
	}
}

func equalOrigins(a, b ir.Origins) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestExtensionDown(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close() // connection refused from now on
	for _, policy := range []FailurePolicy{FailClosed, FailOpen} {
		t.Run(string(policy), func(t *testing.T) {
			r := newRunner(t, Registration{Address: addr, FailurePolicy: policy, Hooks: []Hook{HookPostVirtualHostModify, HookPostHTTPListenerModify}})
			in := translate(t, fixtureYAML)
			start := time.Now()
			out, failures := r.Apply(context.Background(), in, Refs{})
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("Apply took %v", d)
			}
			if len(failures) != 3 { // two virtual hosts, one listener
				t.Fatalf("failures: %v, want 3", failures)
			}
			for _, f := range failures {
				if f.Code != codes.Unavailable || f.Outcome != OutcomeError {
					t.Errorf("failure %v, want Unavailable", f)
				}
			}
			if got := testutil.ToFloat64(r.calls.WithLabelValues(string(HookPostVirtualHostModify), string(OutcomeError))); got != 2 {
				t.Errorf("metric: %v errors of PostVirtualHostModify, want 2", got)
			}
			if (out == nil) != (policy == FailClosed) {
				t.Fatalf("policy %s: resources %v", policy, out)
			}
			if out != nil && !proto.Equal(routeConfig(out, translator.HTTPRouteConfigName), routeConfig(in, translator.HTTPRouteConfigName)) {
				t.Errorf("FailOpen with the extension down changed the routes")
			}
		})
	}
}

func TestRecoveryOnTheNextGoodCall(t *testing.T) {
	var broken atomic.Bool
	broken.Store(true)
	addr, calls := serve(t, &sdk.Server{HTTPListenerModify: func(ctx context.Context, req *v1alpha1.PostHTTPListenerModifyRequest) (*v1alpha1.PostHTTPListenerModifyResponse, error) {
		if broken.Load() {
			return nil, status.Error(codes.Unavailable, "starting")
		}
		return listenerBuffer(ctx, req)
	}})
	r := newRunner(t, Registration{Address: addr, Hooks: []Hook{HookPostHTTPListenerModify}})
	in := translate(t, fixtureYAML)
	if out, failures := r.Apply(context.Background(), in, Refs{}); out != nil || len(failures) != 1 {
		t.Fatalf("broken: %v %v", out, failures)
	}
	broken.Store(false)
	out, failures := r.Apply(context.Background(), in, Refs{})
	if out == nil || len(failures) != 0 {
		t.Fatalf("recovered: %v", failures)
	}
	if l := listener(out, translator.HTTPListenerName); l.GetPerConnectionBufferLimitBytes().GetValue() != 1234 {
		t.Errorf("listener not modified after recovery: %v", l)
	}
	if n := calls.get(HookPostHTTPListenerModify); n != 2 {
		t.Errorf("%d calls: a failure must not be cached", n)
	}
}

func TestCache(t *testing.T) {
	all := []Hook{HookPostTranslateInsert, HookPostRouteModify, HookPostVirtualHostModify, HookPostHTTPListenerModify, HookPostTranslateModify}
	addr, calls := serve(t, &sdk.Server{RouteModify: routeHeader, VirtualHostModify: vhostHeader, HTTPListenerModify: listenerBuffer, TranslateInsert: insertSidecar, TranslateModify: modifyTimeouts})
	r := newRunner(t, Registration{Address: addr, Hooks: all})
	apply := func(in *translator.Resources) *translator.Resources {
		t.Helper()
		out, failures := r.Apply(context.Background(), in, refsA)
		if len(failures) > 0 {
			t.Fatalf("failures: %v", failures)
		}
		return out
	}
	in := translate(t, fixtureYAML)
	first := apply(in)
	if n := calls.total(); n != 6 {
		t.Fatalf("%d calls, want 6 (insert, route, two virtual hosts, listener, modify)", n)
	}
	// The same input again (translated anew: equal, not the same
	// messages): no call but PostTranslateInsert (never cached: its
	// request is empty), the same output.
	f := freeze(in)
	second := apply(translate(t, fixtureYAML))
	if n := calls.total(); n != 7 || calls.get(HookPostTranslateInsert) != 2 {
		t.Errorf("the second Apply called the extension %d times, want once (PostTranslateInsert): %v", n-6, calls.n)
	}
	f.check(t)
	for i, l := range [][2][]proto.Message{{first.Listeners, second.Listeners}, {first.Routes, second.Routes}, {first.Clusters, second.Clusters}, {first.Secrets, second.Secrets}} {
		for j := range l[0] {
			if !proto.Equal(l[0][j], l[1][j]) {
				t.Errorf("list %d: cached output differs for %s", i, translator.ResourceName(l[0][j]))
			}
		}
	}
	if got := testutil.ToFloat64(r.calls.WithLabelValues(string(HookPostVirtualHostModify), string(OutcomeCached))); got != 2 {
		t.Errorf("cached PostVirtualHostModify: %v, want 2", got)
	}
	// b.example.com changes: its virtual host, the listener (whose HCM is
	// the same: not called) and the whole configuration are sent again.
	changed := strings.Replace(fixtureYAML, "prefix: /b}", "prefix: /bee}", 1)
	apply(translate(t, changed))
	if got := calls.get(HookPostVirtualHostModify); got != 3 {
		t.Errorf("PostVirtualHostModify called %d times, want 3 (b.example.com again)", got)
	}
	if got := calls.get(HookPostTranslateModify); got != 2 {
		t.Errorf("PostTranslateModify called %d times, want 2", got)
	}
	if got := calls.get(HookPostHTTPListenerModify) + calls.get(HookPostRouteModify); got != 2 {
		t.Errorf("unchanged resources sent again: %v", calls.n)
	}
	// The first b.example.com's answer was not used by the last Apply:
	// dropped, so going back calls again.
	apply(translate(t, fixtureYAML))
	if got := calls.get(HookPostVirtualHostModify); got != 4 {
		t.Errorf("PostVirtualHostModify called %d times, want 4 (unused answers are dropped)", got)
	}
}

// staticCluster is a cluster named name sending to addr:8080.
func staticCluster(name, addr string) *clusterv3.Cluster {
	return &clusterv3.Cluster{
		Name:                 name,
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC},
		LoadAssignment: &endpointv3.ClusterLoadAssignment{ClusterName: name, Endpoints: []*endpointv3.LocalityLbEndpoints{{
			LbEndpoints: []*endpointv3.LbEndpoint{{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
				Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
					Address: addr, PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: 8080}}}},
			}}}},
		}}},
	}
}

// PostTranslateInsert's request is empty, so the same request says
// nothing about the answer: an extension restarted with a new upstream
// answers differently. Its answer must come from a call on every Apply,
// never from the last Apply's cache.
func TestPostTranslateInsertIsCalledOnEveryApply(t *testing.T) {
	tests := []struct {
		name          string
		first, second []*clusterv3.Cluster
	}{
		{"new upstream", []*clusterv3.Cluster{staticCluster("ext/sidecar", "10.0.0.1")}, []*clusterv3.Cluster{staticCluster("ext/sidecar", "10.0.0.2")}},
		{"cluster added", nil, []*clusterv3.Cluster{staticCluster("ext/sidecar", "10.0.0.1")}},
		{"cluster removed", []*clusterv3.Cluster{staticCluster("ext/sidecar", "10.0.0.1")}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var answer atomic.Pointer[[]*clusterv3.Cluster]
			answer.Store(&tc.first)
			addr, calls := serve(t, &sdk.Server{TranslateInsert: func(context.Context, *v1alpha1.PostTranslateInsertRequest) (*v1alpha1.PostTranslateInsertResponse, error) {
				return &v1alpha1.PostTranslateInsertResponse{Clusters: *answer.Load()}, nil
			}})
			r := newRunner(t, Registration{Address: addr, Hooks: []Hook{HookPostTranslateInsert}})
			apply := func(want []*clusterv3.Cluster) {
				t.Helper()
				out, failures := r.Apply(context.Background(), translate(t, fixtureYAML), Refs{})
				if out == nil || len(failures) > 0 {
					t.Fatalf("failures: %v", failures)
				}
				got := cluster(out, "ext/sidecar")
				switch {
				case len(want) == 0 && got != nil:
					t.Errorf("cluster %v still served, want none", got)
				case len(want) > 0 && !proto.Equal(got, want[0]):
					t.Errorf("cluster:\n%v\nwant:\n%v", got, want[0])
				}
			}
			apply(tc.first)
			answer.Store(&tc.second) // the extension restarts with another answer
			apply(tc.second)
			if n := calls.get(HookPostTranslateInsert); n != 2 {
				t.Errorf("PostTranslateInsert called %d times, want 2 (once per Apply)", n)
			}
			if got := testutil.ToFloat64(r.calls.WithLabelValues(string(HookPostTranslateInsert), string(OutcomeCached))); got != 0 {
				t.Errorf("%v PostTranslateInsert answers counted as cached", got)
			}
		})
	}
}

func TestPhaseBudget(t *testing.T) {
	// Every call hangs; one at a time, each would take its timeout: the
	// budget stops the rest.
	hang := make(chan struct{})
	t.Cleanup(func() { close(hang) })
	wait := func(ctx context.Context) error {
		select {
		case <-ctx.Done():
		case <-hang:
		}
		return ctx.Err()
	}
	addr, _ := serve(t, &sdk.Server{
		VirtualHostModify: func(ctx context.Context, _ *v1alpha1.PostVirtualHostModifyRequest) (*v1alpha1.PostVirtualHostModifyResponse, error) {
			return nil, wait(ctx)
		},
		HTTPListenerModify: func(ctx context.Context, _ *v1alpha1.PostHTTPListenerModifyRequest) (*v1alpha1.PostHTTPListenerModifyResponse, error) {
			return nil, wait(ctx)
		},
	})
	r := newRunner(t, Registration{Address: addr, Hooks: []Hook{HookPostVirtualHostModify, HookPostHTTPListenerModify},
		Timeout: 300 * time.Millisecond, PhaseBudget: 400 * time.Millisecond, MaxConcurrency: 1, FailurePolicy: FailOpen})
	start := time.Now()
	out, failures := r.Apply(context.Background(), translate(t, fixtureYAML), Refs{})
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Apply took %v with a budget of 400ms", d)
	}
	var budget int
	for _, f := range failures {
		if f.Outcome != OutcomeTimeout {
			t.Errorf("failure %v, want a timeout", f)
		}
		if strings.Contains(f.Message, "phase budget") {
			budget++
		}
	}
	if len(failures) != 3 || budget == 0 {
		t.Errorf("failures: %v, want both virtual hosts and the listener, some for the budget", failures)
	}
	if out == nil || len(out.Listeners) != 1 {
		t.Errorf("FailOpen: %v", out)
	}
}

func TestNewRunnerRefusesAnInvalidRegistration(t *testing.T) {
	if _, err := NewRunner(Registration{}, nil); err == nil {
		t.Error("no error")
	}
}
