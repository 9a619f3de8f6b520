package extension

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"

	egpb "github.com/envoyproxy/gateway/proto/extension"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	basicauthv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/basic_auth/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/portcullis/portcullis/controlplane/internal/config"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/pipeline"
	"github.com/portcullis/portcullis/controlplane/internal/translator"
)

// egServer is an extension of the Envoy Gateway dialect, written against
// Envoy Gateway's own generated server (its Go module), answering as
// Envoy Gateway's example extension does: a policy's header on the routes
// it reaches, a basic_auth filter in front of each HTTP connection manager
// of a listener with policies, nil ("no change") everywhere else, and one
// cluster added by PostTranslateModify. It records the requests.
type egServer struct {
	egpb.UnimplementedEnvoyGatewayExtensionServer
	mu        sync.Mutex
	routes    map[string]*egpb.PostRouteExtensionContext
	listeners map[string][]string
	translate *egpb.PostTranslateModifyRequest
}

// resourceNames are the metadata.name of extension resources.
func resourceNames(t *testing.T, rs []*egpb.ExtensionResource) []string {
	var out []string
	for _, r := range rs {
		var o struct {
			Metadata struct{ Name string } `json:"metadata"`
		}
		if err := json.Unmarshal(r.GetUnstructuredBytes(), &o); err != nil {
			t.Errorf("extension resource %q: %v", r.GetUnstructuredBytes(), err)
		}
		out = append(out, o.Metadata.Name)
	}
	return out
}

func (s *egServer) PostRouteModify(_ context.Context, req *egpb.PostRouteModifyRequest) (*egpb.PostRouteModifyResponse, error) {
	s.mu.Lock()
	s.routes[req.GetRoute().GetName()] = req.GetPostRouteContext()
	s.mu.Unlock()
	if len(req.GetPostRouteContext().GetExtensionPolicies()) == 0 {
		return &egpb.PostRouteModifyResponse{}, nil
	}
	rt := req.GetRoute()
	rt.ResponseHeadersToAdd = append(rt.ResponseHeadersToAdd, &corev3.HeaderValueOption{
		Header: &corev3.HeaderValue{Key: "x-quota", Value: fmt.Sprint(len(req.GetPostRouteContext().GetExtensionPolicies()))}})
	return &egpb.PostRouteModifyResponse{Route: rt}, nil
}

func (s *egServer) PostVirtualHostModify(context.Context, *egpb.PostVirtualHostModifyRequest) (*egpb.PostVirtualHostModifyResponse, error) {
	return &egpb.PostVirtualHostModifyResponse{}, nil
}

func (s *egServer) PostHTTPListenerModify(_ context.Context, req *egpb.PostHTTPListenerModifyRequest) (*egpb.PostHTTPListenerModifyResponse, error) {
	l := req.GetListener()
	var policies []string
	for _, r := range req.GetPostListenerContext().GetExtensionResources() {
		policies = append(policies, string(r.GetUnstructuredBytes()))
	}
	s.mu.Lock()
	s.listeners[l.GetName()] = policies
	s.mu.Unlock()
	if len(policies) == 0 {
		return &egpb.PostHTTPListenerModifyResponse{}, nil
	}
	ba, err := anypb.New(&basicauthv3.BasicAuth{Users: &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{
		InlineString: "user:{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g="}}})
	if err != nil {
		return nil, err
	}
	for _, fc := range l.GetFilterChains() {
		for _, f := range fc.GetFilters() {
			hcm := &hcmv3.HttpConnectionManager{}
			if f.GetTypedConfig().UnmarshalTo(hcm) != nil {
				continue
			}
			hcm.HttpFilters = append([]*hcmv3.HttpFilter{{Name: "envoy.filters.http.basic_auth",
				ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: ba}}}, hcm.HttpFilters...)
			if f.ConfigType, err = anyOf(hcm); err != nil {
				return nil, err
			}
		}
	}
	return &egpb.PostHTTPListenerModifyResponse{Listener: l}, nil
}

func anyOf(hcm *hcmv3.HttpConnectionManager) (*listenerv3.Filter_TypedConfig, error) {
	a, err := anypb.New(hcm)
	return &listenerv3.Filter_TypedConfig{TypedConfig: a}, err
}

func (s *egServer) PostTranslateModify(_ context.Context, req *egpb.PostTranslateModifyRequest) (*egpb.PostTranslateModifyResponse, error) {
	s.mu.Lock()
	s.translate = req
	s.mu.Unlock()
	added := &clusterv3.Cluster{Name: "vendor-added", ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC}}
	return &egpb.PostTranslateModifyResponse{Clusters: append(req.GetClusters(), added), Secrets: req.GetSecrets()}, nil
}

// listenEG serves srv, Envoy Gateway's service, on loopback.
func listenEG(t *testing.T, srv egpb.EnvoyGatewayExtensionServer) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	egpb.RegisterEnvoyGatewayExtensionServer(s, srv)
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	return lis.Addr().String()
}

// applyGolden runs the extensions of the configuration file text (%s is
// addr) on the golden objects' translation.
func applyGolden(t *testing.T, text, addr string) (in, out *translator.Resources, failures []Failure) {
	t.Helper()
	cfg, err := config.Parse(fmt.Appendf(nil, text, addr), "eg.yaml")
	if err != nil {
		t.Fatal(err)
	}
	regs, err := FromConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	chain, closeConns, err := Connect(regs)
	if err != nil {
		t.Fatal(err)
	}
	defer closeConns()
	res := pipeline.Run(goldenSet(t), withConfig(cfg))
	out, failures = chain.Apply(t.Context(), res.Resources, RefsOf(res.Build.Model))
	return res.Resources, out, failures
}

const egConfig = `
extensions:
- name: eg
  address: %s
  dialect: EnvoyGateway
  hooks: [PostRouteModify, PostVirtualHostModify, PostHTTPListenerModify, PostTranslateModify]
  resources: [{group: example.vendor.io, version: v1, kind: RetryPolicy}]
  policyResources: [{group: example.vendor.io, version: v1, kind: Quota}]
  timeout: 10s
`

// TestEnvoyGatewayDialect calls an extension written against Envoy
// Gateway's contract with Envoy Gateway's rules, and checks what it was
// sent and what its answers did.
func TestEnvoyGatewayDialect(t *testing.T) {
	srv := &egServer{routes: map[string]*egpb.PostRouteExtensionContext{}, listeners: map[string][]string{}}
	in, out, failures := applyGolden(t, egConfig, listenEG(t, srv))
	if len(failures) > 0 || out == nil {
		t.Fatalf("failures: %v", failures)
	}

	t.Run("route context", func(t *testing.T) {
		// The rule "retried" references the RetryPolicy and is targeted by
		// the Quota "limits"; the others get the Gateway's Quota "site".
		var retried, plain *egpb.PostRouteExtensionContext
		for name, c := range srv.routes {
			switch {
			case strings.Contains(name, "/rule/0/match/0/"):
				retried = c
			case strings.Contains(name, "/rule/1/match/0/"):
				plain = c
			}
		}
		if retried == nil || plain == nil {
			t.Fatalf("routes called: %v", slices.Sorted(func(yield func(string) bool) {
				for n := range srv.routes {
					yield(n)
				}
			}))
		}
		if got := resourceNames(t, retried.GetExtensionResources()); !slices.Equal(got, []string{"retry"}) {
			t.Errorf("rule retried: extension_resources %v, want [retry] (its ExtensionRef)", got)
		}
		if got := resourceNames(t, retried.GetExtensionPolicies()); !slices.Equal(got, []string{"limits"}) {
			t.Errorf("rule retried: extension_policies %v, want [limits]", got)
		}
		if got := resourceNames(t, plain.GetExtensionPolicies()); !slices.Equal(got, []string{"site"}) || len(plain.GetExtensionResources()) > 0 {
			t.Errorf("rule 1: extension_resources %v, extension_policies %v; want none and [site]", resourceNames(t, plain.GetExtensionResources()), got)
		}
		if !slices.Equal(retried.GetHostnames(), []string{"app.example.com"}) {
			t.Errorf("hostnames %v, want [app.example.com]", retried.GetHostnames())
		}
	})

	t.Run("routes changed; nil virtual hosts kept", func(t *testing.T) {
		changed, vhosts := 0, 0
		for _, rc := range typed[*routev3.RouteConfiguration](out.Routes) {
			for _, vh := range rc.GetVirtualHosts() {
				vhosts++
				for _, r := range vh.GetRoutes() {
					if slices.ContainsFunc(r.GetResponseHeadersToAdd(), func(h *corev3.HeaderValueOption) bool { return h.GetHeader().GetKey() == "x-quota" }) {
						changed++
					}
				}
			}
		}
		want := 0
		for _, rc := range typed[*routev3.RouteConfiguration](in.Routes) {
			want += len(rc.GetVirtualHosts())
		}
		if vhosts != want {
			t.Errorf("%d virtual hosts after the hooks, want %d: a nil PostVirtualHostModify answer is no change", vhosts, want)
		}
		if changed != len(srv.routes) {
			t.Errorf("%d routes carry the policy's header, want %d (every route with a policy)", changed, len(srv.routes))
		}
	})

	t.Run("listener policies", func(t *testing.T) {
		got := srv.listeners[ir.HTTPListenerName]
		if len(got) != 1 || !strings.Contains(got[0], `"name":"site"`) {
			t.Fatalf("%s received %v, want the Gateway's Quota site", ir.HTTPListenerName, got)
		}
		for _, l := range typed[*listenerv3.Listener](out.Listeners) {
			if l.GetName() != ir.HTTPListenerName {
				continue
			}
			hcm := &hcmv3.HttpConnectionManager{}
			if err := l.GetFilterChains()[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(hcm); err != nil {
				t.Fatal(err)
			}
			if first := hcm.GetHttpFilters()[0].GetName(); first != "envoy.filters.http.basic_auth" {
				t.Errorf("first HTTP filter %q, want the extension's basic_auth", first)
			}
			return
		}
		t.Errorf("no listener %s after the hooks", ir.HTTPListenerName)
	})

	t.Run("translate sends and replaces clusters and secrets only", func(t *testing.T) {
		req := srv.translate
		if req == nil {
			t.Fatal("PostTranslateModify was not called")
		}
		if len(req.GetListeners())+len(req.GetRoutes()) != 0 || len(req.GetClusters()) == 0 {
			t.Errorf("sent %d listeners, %d route configurations, %d clusters; want 0, 0 and all", len(req.GetListeners()), len(req.GetRoutes()), len(req.GetClusters()))
		}
		if got := resourceNames(t, req.GetPostTranslateContext().GetExtensionResources()); !slices.Equal(got, []string{"limits", "site"}) {
			t.Errorf("context policies %v, want [limits site]", got)
		}
		if len(out.Listeners) == 0 || len(out.Routes) != len(in.Routes) {
			t.Errorf("%d listeners and %d route configurations after; types not sent must be kept", len(out.Listeners), len(out.Routes))
		}
		if !slices.ContainsFunc(out.Clusters, func(m proto.Message) bool { return translator.ResourceName(m) == "vendor-added" }) {
			t.Error("the cluster the answer added is missing")
		}
	})
}

// TestEnvoyGatewayTranslationIncludes: the translation settings select
// what PostTranslateModify sends.
func TestEnvoyGatewayTranslationIncludes(t *testing.T) {
	srv := &egServer{routes: map[string]*egpb.PostRouteExtensionContext{}, listeners: map[string][]string{}}
	_, _, _ = applyGolden(t, `
extensions:
- name: eg
  address: %s
  dialect: EnvoyGateway
  hooks: [PostTranslateModify]
  translation: {listener: {includeAll: true}, route: {includeAll: true}, secret: {includeAll: false}}
  timeout: 10s
`, listenEG(t, srv))
	req := srv.translate
	if req == nil {
		t.Fatal("PostTranslateModify was not called")
	}
	if len(req.GetListeners()) == 0 || len(req.GetRoutes()) == 0 || len(req.GetClusters()) == 0 || len(req.GetSecrets()) != 0 {
		t.Errorf("sent %d listeners, %d route configurations, %d clusters, %d secrets; want all, all, all, none",
			len(req.GetListeners()), len(req.GetRoutes()), len(req.GetClusters()), len(req.GetSecrets()))
	}
}

// TestDialectMismatchSaysSo: a Portcullis-dialect registration of an Envoy
// Gateway extension fails with a message that names the dialect.
func TestDialectMismatchSaysSo(t *testing.T) {
	srv := &egServer{routes: map[string]*egpb.PostRouteExtensionContext{}, listeners: map[string][]string{}}
	_, out, failures := applyGolden(t, strings.Replace(egConfig, "  dialect: EnvoyGateway\n", "", 1), listenEG(t, srv))
	if out != nil || len(failures) == 0 {
		t.Fatalf("calls succeeded (%d failures): the server does not serve the Portcullis contract", len(failures))
	}
	if msg := failures[0].Message; !strings.Contains(msg, "unknown service") || !strings.Contains(msg, "dialect") {
		t.Errorf("failure %q does not point at the dialect", msg)
	}
}

func TestDialectRegistration(t *testing.T) {
	for _, tc := range []struct {
		name    string
		reg     Registration
		wantErr string
	}{
		{"EnvoyGateway", Registration{Dialect: DialectEnvoyGateway, Hooks: []Hook{HookPostTranslateModify}}, ""},
		{"unknown dialect", Registration{Dialect: "Istio", Hooks: []Hook{HookPostTranslateModify}}, `dialect: "Istio" is neither`},
		{"insert under EnvoyGateway", Registration{Dialect: DialectEnvoyGateway, Hooks: []Hook{HookPostTranslateInsert}}, "PostTranslateInsert is not a hook of dialect EnvoyGateway"},
		{"translation under Portcullis", Registration{Hooks: []Hook{HookPostTranslateModify}, Translation: &Translation{}}, "translation: only for dialect EnvoyGateway"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.reg.Name, tc.reg.Address = "x", "127.0.0.1:1"
			err := tc.reg.Validate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("Validate: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("Validate: %v, want %q", err, tc.wantErr)
			}
		})
	}
}
