package sdktest

import (
	"context"
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/proto"

	"github.com/portcullis/portcullis/extension/api/v1alpha1"
)

// Config is a translated configuration to run an extension's hooks on,
// standing in for the one Portcullis would send. Run copies it: the
// caller's messages are not modified.
type Config struct {
	Listeners           []*listenerv3.Listener
	RouteConfigurations []*routev3.RouteConfiguration
	Clusters            []*clusterv3.Cluster
	Secrets             []*tlsv3.Secret
	// Routes are the routes that reference resources of the extension
	// (an HTTPRoute rule's ExtensionRef filters): PostRouteModify is
	// called for each.
	Routes []RouteInput
	// Origins are the objects each virtual host (by name) and listener
	// (by name) came from: their requests' context. Optional.
	Origins map[string][]*v1alpha1.ObjectRef
	// Backends are the clusters of backend references to the
	// extension's backend kinds, by cluster name (a cluster of
	// Clusters, which Portcullis makes without endpoints): the object
	// each stands for. PostClusterModify is called for each.
	Backends map[string]*v1alpha1.ExtensionResource
}

// RouteInput is a route that references resources of the extension.
type RouteInput struct {
	// Name is the Envoy route's name: PostRouteModify is called for each
	// route of that name, in every virtual host that has one, as
	// Portcullis does.
	Name string
	// Context is the route's origin. Its hostnames, when empty, are
	// those of each virtual host the route is in (its domains without
	// the "host:*" variants).
	Context *v1alpha1.RouteContext
	// ExtensionResources are the resources the rule references (see
	// Resource).
	ExtensionResources []*v1alpha1.ExtensionResource
}

// Result is the configuration after the hooks, as Portcullis would
// serve it: every list sorted by name.
type Result struct {
	Listeners           []*listenerv3.Listener
	RouteConfigurations []*routev3.RouteConfiguration
	Clusters            []*clusterv3.Cluster
	Secrets             []*tlsv3.Secret
}

// Resource is an extension resource holding obj (an object of the
// extension's kind: a typed struct or an unstructured map) as JSON.
func Resource(t testing.TB, obj any) *v1alpha1.ExtensionResource {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return &v1alpha1.ExtensionResource{UnstructuredJson: b}
}

// Run serves srv in-process (Serve) and calls its hooks on cfg through
// gRPC, in Portcullis's order, each on the previous one's result:
// PostTranslateInsert (its clusters and secrets added), PostClusterModify
// for each cluster of cfg.Backends, PostRouteModify for each route of
// cfg.Routes, PostVirtualHostModify for every virtual
// host (an unset answer drops it), PostHTTPListenerModify for every
// listener with an HTTP connection manager (an unset answer drops it),
// then PostTranslateModify, whose answer replaces everything. It returns
// the resulting configuration, so that a test sees the extension's whole
// effect without a control plane.
//
// It calls every hook, whether or not the extension would subscribe to
// it (the sdk.Server defaults pass their input through), one call at a
// time. A failed call fails the test (t.Fatalf), naming the hook and the
// resource.
//
// It is not Portcullis: it checks only that every resulting resource
// passes its proto validation (ValidateAll), that answers keep the names
// Portcullis requires, and that added clusters and secrets have names of
// their own. Portcullis checks more (the ext_authz filter it configured
// is kept, routes reach existing clusters, listeners keep their address
// and route configurations, ...) and applies the registration's failure
// policy; test against `portcullis translate --show-extension-diff` for
// that.
func Run(t testing.TB, srv v1alpha1.ExtensionServerServer, cfg Config) *Result {
	t.Helper()
	r := &runner{t: t, ctx: context.Background(), c: Serve(t, srv), cfg: cfg}
	out := &Result{
		Listeners:           clones(cfg.Listeners),
		RouteConfigurations: clones(cfg.RouteConfigurations),
		Clusters:            clones(cfg.Clusters),
		Secrets:             clones(cfg.Secrets),
	}
	r.postTranslateInsert(out)
	r.postClusterModify(out)
	// PostRouteModify for every route first, then PostVirtualHostModify
	// with the routes as PostRouteModify left them.
	r.postRouteModify(out)
	r.postVirtualHostModify(out)
	r.postHTTPListenerModify(out)
	out = r.postTranslateModify(out)

	validateAll(t, "Listener", out.Listeners)
	validateAll(t, "RouteConfiguration", out.RouteConfigurations)
	validateAll(t, "Cluster", out.Clusters)
	validateAll(t, "Secret", out.Secrets)
	return out
}

// runner calls one extension's hooks for Run, one method per hook, each
// changing the Result in place.
type runner struct {
	t   testing.TB
	ctx context.Context
	c   v1alpha1.ExtensionServerClient
	cfg Config
}

// postTranslateInsert adds the extension's clusters and secrets.
func (r *runner) postTranslateInsert(out *Result) {
	r.t.Helper()
	ins, err := r.c.PostTranslateInsert(r.ctx, &v1alpha1.PostTranslateInsertRequest{})
	if err != nil {
		r.t.Fatalf("PostTranslateInsert: %v", err)
	}
	checkAdded(r.t, "cluster", out.Clusters, ins.GetClusters())
	checkAdded(r.t, "secret", out.Secrets, ins.GetSecrets())
	out.Clusters = append(out.Clusters, ins.GetClusters()...)
	out.Secrets = append(out.Secrets, ins.GetSecrets()...)
}

// postClusterModify calls PostClusterModify for each backend's cluster.
func (r *runner) postClusterModify(out *Result) {
	r.t.Helper()
	for i, cl := range out.Clusters {
		backend, ok := r.cfg.Backends[cl.GetName()]
		if !ok {
			continue
		}
		resp, err := r.c.PostClusterModify(r.ctx, &v1alpha1.PostClusterModifyRequest{Cluster: cl, Backend: backend,
			Context: &v1alpha1.ClusterContext{Origins: r.cfg.Origins[cl.GetName()]}})
		if err != nil {
			r.t.Fatalf("PostClusterModify of cluster %q: %v", cl.GetName(), err)
		}
		if resp.GetCluster() == nil || resp.GetCluster().GetName() != cl.GetName() {
			r.t.Fatalf("PostClusterModify of cluster %q: answered %v; the cluster must be returned with its name", cl.GetName(), resp.GetCluster())
		}
		out.Clusters[i] = resp.GetCluster()
	}
}

// postRouteModify calls PostRouteModify for each route of cfg.Routes, in
// every virtual host.
func (r *runner) postRouteModify(out *Result) {
	r.t.Helper()
	for _, rc := range out.RouteConfigurations {
		for _, vh := range rc.GetVirtualHosts() {
			for i, route := range vh.GetRoutes() {
				for _, in := range r.cfg.Routes {
					if route.GetName() == "" || route.GetName() != in.Name {
						continue
					}
					vh.Routes[i] = r.modifyRoute(rc, vh, route, in)
				}
			}
		}
	}
}

// modifyRoute calls PostRouteModify on route of vh, as in says.
func (r *runner) modifyRoute(rc *routev3.RouteConfiguration, vh *routev3.VirtualHost, route *routev3.Route, in RouteInput) *routev3.Route {
	r.t.Helper()
	rctx := proto.Clone(orEmpty(in.Context)).(*v1alpha1.RouteContext)
	if len(rctx.GetHostnames()) == 0 {
		rctx.Hostnames = hostnames(vh)
	}
	resp, err := r.c.PostRouteModify(r.ctx, &v1alpha1.PostRouteModifyRequest{Route: route, Context: rctx, ExtensionResources: in.ExtensionResources})
	if err != nil {
		r.t.Fatalf("PostRouteModify of route %q of virtual host %q of RouteConfiguration %q: %v", route.GetName(), vh.GetName(), rc.GetName(), err)
	}
	if got := resp.GetRoute(); got == nil || got.GetName() != route.GetName() {
		r.t.Fatalf("PostRouteModify of route %q of virtual host %q: the answer has no route, or one named %q (the name must not change)", route.GetName(), vh.GetName(), got.GetName())
	}
	return resp.GetRoute()
}

// postVirtualHostModify calls PostVirtualHostModify for every virtual
// host; an unset answer drops it.
func (r *runner) postVirtualHostModify(out *Result) {
	r.t.Helper()
	for _, rc := range out.RouteConfigurations {
		var vhs []*routev3.VirtualHost
		for _, vh := range rc.GetVirtualHosts() {
			resp, err := r.c.PostVirtualHostModify(r.ctx, &v1alpha1.PostVirtualHostModifyRequest{
				VirtualHost: vh, Context: &v1alpha1.VirtualHostContext{Origins: r.cfg.Origins[vh.GetName()]}})
			if err != nil {
				r.t.Fatalf("PostVirtualHostModify of virtual host %q of RouteConfiguration %q: %v", vh.GetName(), rc.GetName(), err)
			}
			if got := resp.GetVirtualHost(); got != nil {
				if got.GetName() != vh.GetName() || !slices.Equal(got.GetDomains(), vh.GetDomains()) {
					r.t.Fatalf("PostVirtualHostModify of virtual host %q of RouteConfiguration %q: the answer's name or domains changed (%q, %v)", vh.GetName(), rc.GetName(), got.GetName(), got.GetDomains())
				}
				vhs = append(vhs, got)
			}
		}
		rc.VirtualHosts = vhs
	}
}

// postHTTPListenerModify calls PostHTTPListenerModify for every listener
// with an HTTP connection manager; an unset answer drops it.
func (r *runner) postHTTPListenerModify(out *Result) {
	r.t.Helper()
	var ls []*listenerv3.Listener
	for _, l := range out.Listeners {
		if !hasHCM(l) {
			ls = append(ls, l)
			continue
		}
		resp, err := r.c.PostHTTPListenerModify(r.ctx, &v1alpha1.PostHTTPListenerModifyRequest{
			Listener: l, Context: &v1alpha1.HTTPListenerContext{Origins: r.cfg.Origins[l.GetName()]}})
		if err != nil {
			r.t.Fatalf("PostHTTPListenerModify of listener %q: %v", l.GetName(), err)
		}
		if got := resp.GetListener(); got != nil {
			if got.GetName() != l.GetName() || !proto.Equal(got.GetAddress(), l.GetAddress()) {
				r.t.Fatalf("PostHTTPListenerModify of listener %q: the answer's name or address changed", l.GetName())
			}
			ls = append(ls, got)
		}
	}
	out.Listeners = ls
}

// postTranslateModify calls PostTranslateModify on the configuration
// sorted by name; its answer, sorted, replaces everything.
func (r *runner) postTranslateModify(out *Result) *Result {
	r.t.Helper()
	out.sort()
	all, err := r.c.PostTranslateModify(r.ctx, &v1alpha1.PostTranslateModifyRequest{
		Clusters: out.Clusters, Secrets: out.Secrets, Listeners: out.Listeners, RouteConfigurations: out.RouteConfigurations})
	if err != nil {
		r.t.Fatalf("PostTranslateModify: %v", err)
	}
	res := &Result{Listeners: all.GetListeners(), RouteConfigurations: all.GetRouteConfigurations(), Clusters: all.GetClusters(), Secrets: all.GetSecrets()}
	res.sort()
	return res
}

// sort sorts each kind of resource by name.
func (res *Result) sort() {
	sortByName(res.Clusters)
	sortByName(res.Secrets)
	sortByName(res.Listeners)
	sortByName(res.RouteConfigurations)
}

type named interface {
	proto.Message
	GetName() string
}

func clones[M proto.Message](ms []M) []M {
	out := make([]M, len(ms))
	for i, m := range ms {
		out[i] = proto.Clone(m).(M)
	}
	return out
}

func orEmpty(c *v1alpha1.RouteContext) *v1alpha1.RouteContext {
	if c == nil {
		return &v1alpha1.RouteContext{}
	}
	return c
}

func sortByName[M named](ms []M) {
	sort.SliceStable(ms, func(i, j int) bool { return ms[i].GetName() < ms[j].GetName() })
}

// checkAdded fails the test when an added resource has no name, or the
// name of one that exists.
func checkAdded[M named](t testing.TB, kind string, have, add []M) {
	t.Helper()
	names := map[string]bool{}
	for _, m := range have {
		names[m.GetName()] = true
	}
	for _, m := range add {
		if m.GetName() == "" || names[m.GetName()] {
			t.Fatalf("PostTranslateInsert: a %s without a name, or named as one that exists: %q", kind, m.GetName())
		}
		names[m.GetName()] = true
	}
}

// validateAll fails the test for each resource that does not pass its
// proto validation.
func validateAll[M interface {
	named
	ValidateAll() error
}](t testing.TB, kind string, ms []M) {
	t.Helper()
	for _, m := range ms {
		if err := m.ValidateAll(); err != nil {
			t.Errorf("%s %q after the hooks is invalid: %v", kind, m.GetName(), err)
		}
	}
}

// hostnames are a virtual host's domains without the "host:*" variants.
func hostnames(vh *routev3.VirtualHost) []string {
	var out []string
	for _, d := range vh.GetDomains() {
		if !strings.HasSuffix(d, ":*") {
			out = append(out, d)
		}
	}
	return out
}

// hasHCM says whether a listener has an HTTP connection manager.
func hasHCM(l *listenerv3.Listener) bool {
	chains := slices.Clip(l.GetFilterChains())
	if d := l.GetDefaultFilterChain(); d != nil {
		chains = append(chains, d)
	}
	for _, fc := range chains {
		for _, f := range fc.GetFilters() {
			if tc := f.GetTypedConfig(); tc != nil && tc.MessageIs((*hcmv3.HttpConnectionManager)(nil)) {
				return true
			}
		}
	}
	return false
}
