// Package envoyvalidate checks that the real Envoy accepts the sample
// extension's answers: a listener as Portcullis makes one, after
// PostHTTPListenerModify, with a route after PostRouteModify and the
// cluster of PostTranslateInsert, given to `envoy --mode validate`. It
// needs Envoy (`make tools`), so it lives apart from the hooks' tests: `go
// test ./sample/basicauth` needs no tool. A missing Envoy fails the test,
// never skips it.
package envoyvalidate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	extauthzv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_authz/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3" // the Any of the cluster's protocol options
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/portcullis/portcullis/extension/api/v1alpha1"
	"github.com/portcullis/portcullis/extension/sample/basicauth"
)

// envoyPath finds Envoy as the repository's other tests do: in
// $PORTCULLIS_TOOLS/bin, else the .tools/bin of the repository (the
// nearest parent with go.work), else on PATH.
func envoyPath(t *testing.T) string {
	t.Helper()
	var looked []string
	tools := os.Getenv("PORTCULLIS_TOOLS")
	if tools == "" {
		wd, err := os.Getwd()
		if err != nil {
			t.Fatal(err)
		}
		for d := wd; filepath.Dir(d) != d; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "go.work")); err == nil {
				tools = filepath.Join(d, ".tools")
				break
			}
		}
	}
	if tools != "" {
		p := filepath.Join(tools, "bin", "envoy")
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p
		}
		looked = append(looked, p)
	}
	if p, err := exec.LookPath("envoy"); err == nil {
		return p
	}
	looked = append(looked, "PATH")
	t.Fatalf("envoy not found (looked in %s): run `make tools`", strings.Join(looked, ", "))
	return ""
}

func mustAny(t *testing.T, m proto.Message) *anypb.Any {
	t.Helper()
	a, err := anypb.New(m)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func staticCluster(name string, port uint32) *clusterv3.Cluster {
	return &clusterv3.Cluster{
		Name:                 name,
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC},
		LoadAssignment: &endpointv3.ClusterLoadAssignment{
			ClusterName: name,
			Endpoints: []*endpointv3.LocalityLbEndpoints{{LbEndpoints: []*endpointv3.LbEndpoint{{
				HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
					Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
						Address: "127.0.0.1", PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port},
					}}},
				}},
			}}}},
		},
	}
}

// portcullisListener is ingress_http as Portcullis makes it with a global
// authorization: its own ext_authz filter first, the router last, routes
// by RDS.
func portcullisListener(t *testing.T) *listenerv3.Listener {
	authz := &extauthzv3.ExtAuthz{
		Services: &extauthzv3.ExtAuthz_GrpcService{GrpcService: &corev3.GrpcService{
			TargetSpecifier: &corev3.GrpcService_EnvoyGrpc_{EnvoyGrpc: &corev3.GrpcService_EnvoyGrpc{ClusterName: "extension/auth/global"}},
		}},
		TransportApiVersion: corev3.ApiVersion_V3,
	}
	hcm := &hcmv3.HttpConnectionManager{
		StatPrefix: "ingress_http",
		RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{
			RouteConfigName: "ingress_http",
			ConfigSource: &corev3.ConfigSource{
				ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}},
				ResourceApiVersion:    corev3.ApiVersion_V3,
			},
		}},
		HttpFilters: []*hcmv3.HttpFilter{
			{Name: "envoy.filters.http.ext_authz", ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: mustAny(t, authz)}},
			{Name: "envoy.filters.http.router", ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: mustAny(t, &routerv3.Router{})}},
		},
	}
	return &listenerv3.Listener{
		Name: "ingress_http",
		Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
			Address: "127.0.0.1", PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: 18080},
		}}},
		FilterChains: []*listenerv3.FilterChain{{Filters: []*listenerv3.Filter{{
			Name:       "envoy.filters.network.http_connection_manager",
			ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: mustAny(t, hcm)},
		}}}},
	}
}

func portcullisRoute(t *testing.T, name, prefix string) *routev3.Route {
	return &routev3.Route{
		Name:  name,
		Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: prefix}},
		Action: &routev3.Route_Route{Route: &routev3.RouteAction{
			ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: "service/shop/store/80"},
		}},
		// Portcullis's own ext_authz, disabled on the route.
		TypedPerFilterConfig: map[string]*anypb.Any{
			"envoy.filters.http.ext_authz": mustAny(t, &extauthzv3.ExtAuthzPerRoute{Override: &extauthzv3.ExtAuthzPerRoute_Disabled{Disabled: true}}),
		},
	}
}

func filterResource(name, spec string) *v1alpha1.ExtensionResource {
	return &v1alpha1.ExtensionResource{UnstructuredJson: []byte(fmt.Sprintf(
		`{"apiVersion": "examples.portcullis.dev/v1alpha1", "kind": "BasicAuthFilter", "metadata": {"name": %q, "namespace": "shop"}, "spec": %s}`, name, spec))}
}

func TestEnvoyAcceptsTheAnswers(t *testing.T) {
	envoy := envoyPath(t)
	ext, err := basicauth.New(basicauth.Config{AuthServer: "127.0.0.1:19445", Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	ins, err := ext.PostTranslateInsert(ctx, &v1alpha1.PostTranslateInsertRequest{})
	if err != nil {
		t.Fatal(err)
	}
	lr, err := ext.PostHTTPListenerModify(ctx, &v1alpha1.PostHTTPListenerModifyRequest{Listener: portcullisListener(t)})
	if err != nil {
		t.Fatal(err)
	}
	rc := &v1alpha1.RouteContext{RouteKind: "HTTPRoute", RouteNamespace: "shop", RouteName: "store", Hostnames: []string{"shop.example.com"}}
	var routes []*routev3.Route
	for _, c := range []struct{ name, prefix, spec string }{
		{"staff", "/admin", `{"realm": "staff", "context": {"team": "ops"}}`},
		{"off", "/open", `{"realm": "staff", "disabled": true}`},
	} {
		rr, err := ext.PostRouteModify(ctx, &v1alpha1.PostRouteModifyRequest{
			Route: portcullisRoute(t, "httproute/shop/store/"+c.name, c.prefix), Context: rc,
			ExtensionResources: []*v1alpha1.ExtensionResource{filterResource(c.name, c.spec)},
		})
		if err != nil {
			t.Fatal(err)
		}
		routes = append(routes, rr.GetRoute())
	}
	if _, ok := routes[0].GetTypedPerFilterConfig()[basicauth.FilterName]; !ok {
		t.Fatal("PostRouteModify did not enable the filter on the route")
	}

	// The listener with the route configuration inline: Envoy validates a
	// static bootstrap, without a management server.
	l := lr.GetListener()
	f := l.GetFilterChains()[0].GetFilters()[0]
	hcm := &hcmv3.HttpConnectionManager{}
	if err := f.GetTypedConfig().UnmarshalTo(hcm); err != nil {
		t.Fatal(err)
	}
	hcm.RouteSpecifier = &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: &routev3.RouteConfiguration{
		Name: "ingress_http",
		VirtualHosts: []*routev3.VirtualHost{{
			Name: "shop.example.com", Domains: []string{"shop.example.com"}, Routes: routes,
		}},
	}}
	f.ConfigType = &listenerv3.Filter_TypedConfig{TypedConfig: mustAny(t, hcm)}

	bs := &bootstrapv3.Bootstrap{StaticResources: &bootstrapv3.Bootstrap_StaticResources{
		Listeners: []*listenerv3.Listener{l},
		Clusters: append(ins.GetClusters(),
			staticCluster("extension/auth/global", 19446),
			staticCluster("service/shop/store/80", 19000)),
	}}
	if err := bs.ValidateAll(); err != nil {
		t.Fatalf("bootstrap: %v", err)
	}
	b, err := protojson.MarshalOptions{Indent: "  "}.Marshal(bs)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "envoy.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(cctx, envoy, "--mode", "validate", "-c", path, "--log-level", "warn").CombinedOutput()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("envoy rejects the configuration: %v\n%s\nconfiguration:\n%s", err, out, b)
		}
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "OK") {
		t.Errorf("envoy --mode validate did not say OK:\n%s", out)
	}
}
