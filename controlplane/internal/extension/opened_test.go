package extension

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	egpb "github.com/envoyproxy/gateway/proto/extension"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"

	"github.com/portcullis/portcullis/controlplane/internal/pipeline"
	"github.com/portcullis/portcullis/controlplane/internal/pipeline/goldencase"
	"github.com/portcullis/portcullis/controlplane/internal/translator"
	"github.com/portcullis/portcullis/extension/api/v1alpha1"
	"github.com/portcullis/portcullis/extension/sdk"
	"github.com/portcullis/portcullis/extension/sdk/sdktest"
)

// globalAuth is the translation of the golden case with global external
// authorization on the plaintext listener.
func globalAuth(t *testing.T) *translator.Resources {
	t.Helper()
	dir := filepath.Join("..", "pipeline", "testdata", "global-ext-auth-http")
	set, err := goldencase.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	opts, err := goldencase.Options(dir)
	if err != nil {
		t.Fatal(err)
	}
	return pipeline.Run(set, opts).Resources
}

// renamedWithoutAuthz is the first case: every listener renamed,
// its ext_authz filters dropped.
func renamedWithoutAuthz(t *testing.T, ls []*listenerv3.Listener) []*listenerv3.Listener {
	var out []*listenerv3.Listener
	for _, l := range ls {
		l = proto.Clone(l).(*listenerv3.Listener)
		l.Name += "-copy"
		for _, fc := range l.GetFilterChains() {
			for _, f := range fc.GetFilters() {
				h := &hcmv3.HttpConnectionManager{}
				if f.GetTypedConfig().UnmarshalTo(h) != nil {
					continue
				}
				h.HttpFilters = slices.DeleteFunc(h.HttpFilters, func(f *hcmv3.HttpFilter) bool { return strings.HasPrefix(f.GetName(), translator.ExtAuthzFilterName) })
				f.ConfigType = &listenerv3.Filter_TypedConfig{TypedConfig: mustAny(t, h)}
			}
		}
		out = append(out, l)
	}
	return out
}

// loopbackCluster is a cluster to 127.0.0.1:22.
func loopbackCluster() *clusterv3.Cluster {
	return &clusterv3.Cluster{Name: "vendor-ssh", ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC},
		LoadAssignment: &endpointv3.ClusterLoadAssignment{ClusterName: "vendor-ssh", Endpoints: []*endpointv3.LocalityLbEndpoints{{
			LbEndpoints: []*endpointv3.LbEndpoint{{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
				Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
					Address: "127.0.0.1", PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: 22}}}}}}}},
		}}}}
}

// TestAnswersThatOpenAreRefused: the cases, each answered by a
// real extension through the runner, under both dialects, are failures
// of the hook that name what would be opened; Closed publishes nothing.
func TestAnswersThatOpenAreRefused(t *testing.T) {
	res := globalAuth(t)
	for _, tc := range []struct {
		name   string
		answer func(*v1alpha1.PostTranslateModifyRequest) *v1alpha1.PostTranslateModifyResponse
		allow  bool
		want   string
	}{
		{"listener renamed without ext_authz", func(req *v1alpha1.PostTranslateModifyRequest) *v1alpha1.PostTranslateModifyResponse {
			return &v1alpha1.PostTranslateModifyResponse{Clusters: req.GetClusters(), Secrets: req.GetSecrets(),
				Listeners: renamedWithoutAuthz(t, req.GetListeners()), RouteConfigurations: req.GetRouteConfigurations()}
		}, false, "filter envoy.filters.http.ext_authz was removed"},
		{"a cluster to 127.0.0.1:22", func(req *v1alpha1.PostTranslateModifyRequest) *v1alpha1.PostTranslateModifyResponse {
			return &v1alpha1.PostTranslateModifyResponse{Clusters: append(req.GetClusters(), loopbackCluster()), Secrets: req.GetSecrets(),
				Listeners: req.GetListeners(), RouteConfigurations: req.GetRouteConfigurations()}
		}, false, "endpoint 127.0.0.1:22 is a loopback address"},
		{"a cluster to 127.0.0.1:22, allowed", func(req *v1alpha1.PostTranslateModifyRequest) *v1alpha1.PostTranslateModifyResponse {
			return &v1alpha1.PostTranslateModifyResponse{Clusters: append(req.GetClusters(), loopbackCluster()), Secrets: req.GetSecrets(),
				Listeners: req.GetListeners(), RouteConfigurations: req.GetRouteConfigurations()}
		}, true, ""},
	} {
		t.Run(tc.name+"/Portcullis", func(t *testing.T) {
			addr := sdktest.Listen(t, &sdk.Server{TranslateModify: func(_ context.Context, req *v1alpha1.PostTranslateModifyRequest) (*v1alpha1.PostTranslateModifyResponse, error) {
				return tc.answer(req), nil
			}})
			r := newRunner(t, Registration{Address: addr, Hooks: []Hook{HookPostTranslateModify}, AllowLocalEndpoints: tc.allow})
			checkRefused(t, r, res, HookPostTranslateModify, tc.want)
		})
		t.Run(tc.name+"/EnvoyGateway", func(t *testing.T) {
			addr := listenEG(t, &egTranslate{answer: func(req *egpb.PostTranslateModifyRequest) *egpb.PostTranslateModifyResponse {
				n := tc.answer(&v1alpha1.PostTranslateModifyRequest{Clusters: req.GetClusters(), Secrets: req.GetSecrets(), Listeners: req.GetListeners(), RouteConfigurations: req.GetRoutes()})
				return &egpb.PostTranslateModifyResponse{Clusters: n.GetClusters(), Secrets: n.GetSecrets(), Listeners: n.GetListeners(), Routes: n.GetRouteConfigurations()}
			}})
			r := newRunner(t, Registration{Address: addr, Dialect: DialectEnvoyGateway, Hooks: []Hook{HookPostTranslateModify}, AllowLocalEndpoints: tc.allow,
				Translation: &Translation{Listeners: true, Routes: true, Clusters: true, Secrets: true}})
			checkRefused(t, r, res, HookPostTranslateModify, tc.want)
		})
	}
}

type egTranslate struct {
	egpb.UnimplementedEnvoyGatewayExtensionServer
	answer func(*egpb.PostTranslateModifyRequest) *egpb.PostTranslateModifyResponse
}

func (s *egTranslate) PostTranslateModify(_ context.Context, req *egpb.PostTranslateModifyRequest) (*egpb.PostTranslateModifyResponse, error) {
	return s.answer(req), nil
}

// TestAnswersThatRemoveEverything: answers that leave Envoy no listener
// or no virtual host are failures of the hook unless the registration
// says mayRemoveAll: through PostTranslateModify under both dialects, and
// through nil answers of the Portcullis dialect's per-resource hooks.
func TestAnswersThatRemoveEverything(t *testing.T) {
	res := globalAuth(t)
	empty := func(req *v1alpha1.PostTranslateModifyRequest) *v1alpha1.PostTranslateModifyResponse {
		return &v1alpha1.PostTranslateModifyResponse{Clusters: req.GetClusters(), Secrets: req.GetSecrets(), RouteConfigurations: req.GetRouteConfigurations()}
	}
	for _, mayRemoveAll := range []bool{false, true} {
		want := "remove every listener"
		if mayRemoveAll {
			want = ""
		}
		t.Run(fmt.Sprintf("translate/Portcullis/mayRemoveAll=%v", mayRemoveAll), func(t *testing.T) {
			addr := sdktest.Listen(t, &sdk.Server{TranslateModify: func(_ context.Context, req *v1alpha1.PostTranslateModifyRequest) (*v1alpha1.PostTranslateModifyResponse, error) {
				return empty(req), nil
			}})
			r := newRunner(t, Registration{Address: addr, Hooks: []Hook{HookPostTranslateModify}, MayRemoveAll: mayRemoveAll})
			checkRefused(t, r, res, HookPostTranslateModify, want)
		})
		t.Run(fmt.Sprintf("translate/EnvoyGateway/mayRemoveAll=%v", mayRemoveAll), func(t *testing.T) {
			addr := listenEG(t, &egTranslate{answer: func(req *egpb.PostTranslateModifyRequest) *egpb.PostTranslateModifyResponse {
				return &egpb.PostTranslateModifyResponse{Clusters: req.GetClusters(), Secrets: req.GetSecrets(), Routes: req.GetRoutes()}
			}})
			r := newRunner(t, Registration{Address: addr, Dialect: DialectEnvoyGateway, Hooks: []Hook{HookPostTranslateModify}, MayRemoveAll: mayRemoveAll,
				Translation: &Translation{Listeners: true, Routes: true, Clusters: true, Secrets: true}})
			checkRefused(t, r, res, HookPostTranslateModify, want)
		})
		t.Run(fmt.Sprintf("listeners dropped/mayRemoveAll=%v", mayRemoveAll), func(t *testing.T) {
			addr := sdktest.Listen(t, &sdk.Server{HTTPListenerModify: func(context.Context, *v1alpha1.PostHTTPListenerModifyRequest) (*v1alpha1.PostHTTPListenerModifyResponse, error) {
				return &v1alpha1.PostHTTPListenerModifyResponse{}, nil
			}})
			r := newRunner(t, Registration{Address: addr, Hooks: []Hook{HookPostHTTPListenerModify}, MayRemoveAll: mayRemoveAll})
			checkRefused(t, r, res, HookPostHTTPListenerModify, want)
		})
		t.Run(fmt.Sprintf("virtual hosts dropped/mayRemoveAll=%v", mayRemoveAll), func(t *testing.T) {
			addr := sdktest.Listen(t, &sdk.Server{VirtualHostModify: func(context.Context, *v1alpha1.PostVirtualHostModifyRequest) (*v1alpha1.PostVirtualHostModifyResponse, error) {
				return &v1alpha1.PostVirtualHostModifyResponse{}, nil
			}})
			r := newRunner(t, Registration{Address: addr, Hooks: []Hook{HookPostVirtualHostModify}, MayRemoveAll: mayRemoveAll})
			wantVH := strings.Replace(want, "listener", "virtual host", 1)
			checkRefused(t, r, res, HookPostVirtualHostModify, wantVH)
		})
	}
}

// checkRefused applies r and checks that its one failure is an invalid
// answer of hook saying want, with nothing published (Closed); want ""
// expects the answers accepted.
func checkRefused(t *testing.T, r *Runner, res *translator.Resources, hook Hook, want string) {
	t.Helper()
	out, failures := r.Apply(t.Context(), res, Refs{})
	if want == "" {
		if len(failures) > 0 || out == nil {
			t.Fatalf("refused: %v", failures)
		}
		return
	}
	if out != nil || len(failures) != 1 || failures[0].Hook != hook || failures[0].Outcome != OutcomeInvalid || !strings.Contains(failures[0].Message, want) {
		t.Fatalf("published %v with failures %v; want one invalid answer of %s saying %q and nothing published (Closed)", out != nil, failures, hook, want)
	}
}
