package basicauth_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	extauthzv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_authz/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/portcullis/portcullis/extension/api/v1alpha1"
	"github.com/portcullis/portcullis/extension/sample/basicauth"
	"github.com/portcullis/portcullis/extension/sdk/sdktest"
)

// PortcullisExtAuthz is the name of Portcullis's own ext_authz filter.
const portcullisExtAuthz = "envoy.filters.http.ext_authz"

func newExtension(t *testing.T, authServer string) *basicauth.Extension {
	t.Helper()
	e, err := basicauth.New(basicauth.Config{AuthServer: authServer, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func client(t *testing.T) v1alpha1.ExtensionServerClient {
	return sdktest.Serve(t, newExtension(t, "127.0.0.1:19445"))
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func mustAny(t *testing.T, m proto.Message) *anypb.Any {
	t.Helper()
	a, err := anypb.New(m)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func validate(t *testing.T, m interface{ ValidateAll() error }) {
	t.Helper()
	if err := m.ValidateAll(); err != nil {
		t.Errorf("the answer is not a valid Envoy resource: %v", err)
	}
}

func TestNewConfig(t *testing.T) {
	tests := []struct {
		server   string
		timeout  time.Duration
		wantErr  string
		wantType clusterv3.Cluster_DiscoveryType
		wantHost string
	}{
		{server: "127.0.0.1:19445", wantType: clusterv3.Cluster_STATIC, wantHost: "127.0.0.1"},
		{server: "[::1]:19445", wantType: clusterv3.Cluster_STATIC, wantHost: "::1"},
		{server: "authserver.portcullis-auth.svc:9443", wantType: clusterv3.Cluster_STRICT_DNS, wantHost: "authserver.portcullis-auth.svc"},
		{server: "localhost:9443", wantType: clusterv3.Cluster_STRICT_DNS, wantHost: "localhost"},
		{server: "127.0.0.1", wantErr: "want host:port"},
		{server: "", wantErr: "want host:port"},
		{server: ":9443", wantErr: "no host"},
		{server: "127.0.0.1:0", wantErr: "bad port"},
		{server: "127.0.0.1:http", wantErr: "bad port"},
		{server: "127.0.0.1:70000", wantErr: "bad port"},
		{server: "127.0.0.1:9443", timeout: -1, wantErr: "not positive"},
	}
	for _, tt := range tests {
		t.Run(tt.server, func(t *testing.T) {
			timeout := tt.timeout
			if timeout == 0 {
				timeout = time.Second
			}
			e, err := basicauth.New(basicauth.Config{AuthServer: tt.server, Timeout: timeout})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			resp, err := e.PostTranslateInsert(context.Background(), &v1alpha1.PostTranslateInsertRequest{})
			if err != nil {
				t.Fatal(err)
			}
			c := resp.GetClusters()[0]
			if c.GetType() != tt.wantType {
				t.Errorf("type = %v, want %v", c.GetType(), tt.wantType)
			}
			sa := c.GetLoadAssignment().GetEndpoints()[0].GetLbEndpoints()[0].GetEndpoint().GetAddress().GetSocketAddress()
			if sa.GetAddress() != tt.wantHost {
				t.Errorf("address = %q, want %q", sa.GetAddress(), tt.wantHost)
			}
		})
	}
}

func TestPostTranslateInsert(t *testing.T) {
	c := client(t)
	resp, err := c.PostTranslateInsert(ctxT(t), &v1alpha1.PostTranslateInsertRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.GetClusters()) != 1 || len(resp.GetSecrets()) != 0 {
		t.Fatalf("got %d clusters, %d secrets; want 1, 0", len(resp.GetClusters()), len(resp.GetSecrets()))
	}
	cl := resp.GetClusters()[0]
	validate(t, cl)
	if cl.GetName() != basicauth.ClusterName || cl.GetType() != clusterv3.Cluster_STATIC {
		t.Errorf("cluster %s %v", cl.GetName(), cl.GetType())
	}
	if cl.GetConnectTimeout().AsDuration() != basicauth.ConnectTimeout {
		t.Errorf("connect timeout %v", cl.GetConnectTimeout().AsDuration())
	}
	po := &httpv3.HttpProtocolOptions{}
	if err := cl.GetTypedExtensionProtocolOptions()["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"].UnmarshalTo(po); err != nil {
		t.Fatal(err)
	}
	if po.GetExplicitHttpConfig().GetHttp2ProtocolOptions() == nil {
		t.Errorf("the cluster is not HTTP/2: %v", po)
	}
	sa := cl.GetLoadAssignment().GetEndpoints()[0].GetLbEndpoints()[0].GetEndpoint().GetAddress().GetSocketAddress()
	if sa.GetAddress() != "127.0.0.1" || sa.GetPortValue() != 19445 {
		t.Errorf("endpoint %v", sa)
	}

	// Deterministic: the same answer twice.
	again, err := c.PostTranslateInsert(ctxT(t), &v1alpha1.PostTranslateInsertRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(resp, again) {
		t.Error("two calls, two answers")
	}
}

// filter is an HCM entry.
func filter(t *testing.T, name string, cfg proto.Message, disabled bool) *hcmv3.HttpFilter {
	return &hcmv3.HttpFilter{Name: name, ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: mustAny(t, cfg)}, Disabled: disabled}
}

func portcullisAuthz(t *testing.T, name string) *hcmv3.HttpFilter {
	return filter(t, name, &extauthzv3.ExtAuthz{
		Services: &extauthzv3.ExtAuthz_GrpcService{GrpcService: &corev3.GrpcService{
			TargetSpecifier: &corev3.GrpcService_EnvoyGrpc_{EnvoyGrpc: &corev3.GrpcService_EnvoyGrpc{ClusterName: "extension/auth/global"}},
		}},
		TransportApiVersion: corev3.ApiVersion_V3,
	}, false)
}

func router(t *testing.T) *hcmv3.HttpFilter {
	return filter(t, "envoy.filters.http.router", &routerv3.Router{}, false)
}

func extProc(t *testing.T) *hcmv3.HttpFilter {
	return filter(t, "envoy.filters.http.ext_proc", &extprocv3.ExternalProcessor{
		GrpcService: &corev3.GrpcService{
			TargetSpecifier: &corev3.GrpcService_EnvoyGrpc_{EnvoyGrpc: &corev3.GrpcService_EnvoyGrpc{ClusterName: "extension/proc/global"}},
		},
	}, false)
}

// hcmFilter is an HTTP connection manager as Portcullis makes them: routes
// by RDS over ADS.
func hcmFilter(t *testing.T, routeConfig string, filters ...*hcmv3.HttpFilter) *listenerv3.Filter {
	return &listenerv3.Filter{
		Name: "envoy.filters.network.http_connection_manager",
		ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: mustAny(t, &hcmv3.HttpConnectionManager{
			StatPrefix: routeConfig,
			RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{
				RouteConfigName: routeConfig,
				ConfigSource: &corev3.ConfigSource{
					ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}},
					ResourceApiVersion:    corev3.ApiVersion_V3,
				},
			}},
			HttpFilters: filters,
		})},
	}
}

func listener(name string, port uint32, chains ...*listenerv3.FilterChain) *listenerv3.Listener {
	return &listenerv3.Listener{
		Name: name,
		Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
			Address: "127.0.0.1", PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port},
		}}},
		FilterChains: chains,
	}
}

// httpFilterNames are the names of the HTTP filters of every HCM of l, one
// comma-separated string per HCM, "!" before a disabled one; the default
// chain's last.
func httpFilterNames(t *testing.T, l *listenerv3.Listener) []string {
	t.Helper()
	chains := l.GetFilterChains()
	if l.GetDefaultFilterChain() != nil {
		chains = append(chains, l.GetDefaultFilterChain())
	}
	var out []string
	for _, fc := range chains {
		for _, f := range fc.GetFilters() {
			hcm := &hcmv3.HttpConnectionManager{}
			if !f.GetTypedConfig().MessageIs(hcm) {
				continue
			}
			if err := f.GetTypedConfig().UnmarshalTo(hcm); err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, hf := range hcm.GetHttpFilters() {
				n := hf.GetName()
				if hf.GetDisabled() {
					n = "!" + n
				}
				names = append(names, n)
				if n == "!"+basicauth.FilterName {
					checkAuthzFilter(t, hf)
				}
			}
			out = append(out, strings.Join(names, ","))
		}
	}
	return out
}

// checkAuthzFilter checks the configuration of the extension's filter.
func checkAuthzFilter(t *testing.T, hf *hcmv3.HttpFilter) {
	t.Helper()
	cfg := &extauthzv3.ExtAuthz{}
	if err := hf.GetTypedConfig().UnmarshalTo(cfg); err != nil {
		t.Fatal(err)
	}
	gs := cfg.GetGrpcService()
	if gs.GetEnvoyGrpc().GetClusterName() != basicauth.ClusterName || gs.GetTimeout().AsDuration() != 2*time.Second ||
		cfg.GetTransportApiVersion() != corev3.ApiVersion_V3 || cfg.GetFailureModeAllow() {
		t.Errorf("ext_authz filter: %v", cfg)
	}
}

func TestPostHTTPListenerModify(t *testing.T) {
	c := client(t)
	ours := "!" + basicauth.FilterName
	tests := []struct {
		name     string
		listener func(t *testing.T) *listenerv3.Listener
		want     []string
	}{
		{
			name: "no ext_authz of Portcullis",
			listener: func(t *testing.T) *listenerv3.Listener {
				return listener("ingress_http", 8080, &listenerv3.FilterChain{Filters: []*listenerv3.Filter{hcmFilter(t, "ingress_http", router(t))}})
			},
			want: []string{ours + ",envoy.filters.http.router"},
		},
		{
			name: "after Portcullis's ext_authz filters, before ext_proc",
			listener: func(t *testing.T) *listenerv3.Listener {
				return listener("ingress_http", 8080, &listenerv3.FilterChain{Filters: []*listenerv3.Filter{hcmFilter(t, "ingress_http",
					portcullisAuthz(t, portcullisExtAuthz), portcullisAuthz(t, portcullisExtAuthz+"/extension/default/local-auth/8cdefd7c"),
					extProc(t), router(t))}})
			},
			want: []string{portcullisExtAuthz + "," + portcullisExtAuthz + "/extension/default/local-auth/8cdefd7c," +
				ours + ",envoy.filters.http.ext_proc,envoy.filters.http.router"},
		},
		{
			name: "every chain and the default chain; other network filters left alone",
			listener: func(t *testing.T) *listenerv3.Listener {
				l := listener("ingress_https", 8443,
					&listenerv3.FilterChain{
						FilterChainMatch: &listenerv3.FilterChainMatch{ServerNames: []string{"a.example.com"}},
						Filters:          []*listenerv3.Filter{hcmFilter(t, "https/a.example.com", portcullisAuthz(t, portcullisExtAuthz), router(t))},
					},
					&listenerv3.FilterChain{
						FilterChainMatch: &listenerv3.FilterChainMatch{ServerNames: []string{"b.example.com"}},
						Filters:          []*listenerv3.Filter{hcmFilter(t, "https/b.example.com", router(t))},
					},
				)
				l.DefaultFilterChain = &listenerv3.FilterChain{Filters: []*listenerv3.Filter{hcmFilter(t, "ingress_https", router(t))}}
				return l
			},
			want: []string{
				portcullisExtAuthz + "," + ours + ",envoy.filters.http.router",
				ours + ",envoy.filters.http.router",
				ours + ",envoy.filters.http.router",
			},
		},
		{
			name: "no HCM",
			listener: func(t *testing.T) *listenerv3.Listener {
				return listener("tcp", 9000, &listenerv3.FilterChain{})
			},
			want: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.listener(t)
			resp, err := c.PostHTTPListenerModify(ctxT(t), &v1alpha1.PostHTTPListenerModifyRequest{Listener: proto.Clone(in).(*listenerv3.Listener)})
			if err != nil {
				t.Fatal(err)
			}
			l := resp.GetListener()
			validate(t, l)
			if l.GetName() != in.GetName() || !proto.Equal(l.GetAddress(), in.GetAddress()) {
				t.Errorf("name or address changed: %s %v", l.GetName(), l.GetAddress())
			}
			got := httpFilterNames(t, l)
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("HTTP filters:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}

			// Idempotent: the answer given again comes back unchanged.
			again, err := c.PostHTTPListenerModify(ctxT(t), &v1alpha1.PostHTTPListenerModifyRequest{Listener: proto.Clone(l).(*listenerv3.Listener)})
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(again.GetListener(), l) {
				t.Errorf("a second call changed the listener:\n%v\nwas:\n%v", again.GetListener(), l)
			}
			// Deterministic: the same request, the same answer.
			once, err := c.PostHTTPListenerModify(ctxT(t), &v1alpha1.PostHTTPListenerModifyRequest{Listener: proto.Clone(in).(*listenerv3.Listener)})
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(once.GetListener(), l) {
				t.Error("the same request, another answer")
			}
		})
	}
}

// resource is a BasicAuthFilter as the API server serves it.
func resource(t *testing.T, name string, spec map[string]any) *v1alpha1.ExtensionResource {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"apiVersion": "examples.portcullis.dev/v1alpha1",
		"kind":       "BasicAuthFilter",
		"metadata":   map[string]any{"name": name, "namespace": "shop", "uid": "6c1f", "generation": 3, "resourceVersion": "42"},
		"spec":       spec,
	})
	if err != nil {
		t.Fatal(err)
	}
	return &v1alpha1.ExtensionResource{UnstructuredJson: b}
}

func rawResource(s string) *v1alpha1.ExtensionResource {
	return &v1alpha1.ExtensionResource{UnstructuredJson: []byte(s)}
}

// route is an Envoy route as Portcullis makes one from an HTTPRoute rule,
// with its own ext_authz's per-route setting.
func route(t *testing.T) *routev3.Route {
	return &routev3.Route{
		Name:  "httproute/shop/store/rule/0/match/0",
		Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/admin"}},
		Action: &routev3.Route_Route{Route: &routev3.RouteAction{
			ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: "service/shop/store/80"},
		}},
		TypedPerFilterConfig: map[string]*anypb.Any{
			portcullisExtAuthz: mustAny(t, &extauthzv3.ExtAuthzPerRoute{Override: &extauthzv3.ExtAuthzPerRoute_Disabled{Disabled: true}}),
		},
	}
}

var routeContext = &v1alpha1.RouteContext{
	RouteKind: "HTTPRoute", RouteNamespace: "shop", RouteName: "store",
	Hostnames: []string{"shop.example.com"}, RuleName: "admin", RuleIndex: 0,
}

func TestPostRouteModify(t *testing.T) {
	c := client(t)
	tests := []struct {
		name      string
		resources func(t *testing.T) []*v1alpha1.ExtensionResource
		// want is the context_extensions of the extension's per-route
		// setting; nil: the route is unchanged.
		want     map[string]string
		wantCode codes.Code
		wantErr  []string
	}{
		{
			name: "realm",
			resources: func(t *testing.T) []*v1alpha1.ExtensionResource {
				return []*v1alpha1.ExtensionResource{resource(t, "staff", map[string]any{"realm": "staff"})}
			},
			want: map[string]string{
				"htpasswd.portcullis.dev/realm": "staff",
				"route":                         "HTTPRoute/shop/store",
				"basicauth-filter":              "shop/staff",
			},
		},
		{
			name: "no realm: the auth server's default; extra context",
			resources: func(t *testing.T) []*v1alpha1.ExtensionResource {
				return []*v1alpha1.ExtensionResource{resource(t, "staff", map[string]any{"context": map[string]any{"team": "ops", "tier": "gold"}})}
			},
			want: map[string]string{"team": "ops", "tier": "gold", "route": "HTTPRoute/shop/store", "basicauth-filter": "shop/staff"},
		},
		{
			name: "empty spec",
			resources: func(t *testing.T) []*v1alpha1.ExtensionResource {
				return []*v1alpha1.ExtensionResource{resource(t, "staff", map[string]any{})}
			},
			want: map[string]string{"route": "HTTPRoute/shop/store", "basicauth-filter": "shop/staff"},
		},
		{
			name: "disabled: unchanged",
			resources: func(t *testing.T) []*v1alpha1.ExtensionResource {
				return []*v1alpha1.ExtensionResource{resource(t, "staff", map[string]any{"realm": "staff", "disabled": true})}
			},
		},
		{
			name: "with a status",
			resources: func(t *testing.T) []*v1alpha1.ExtensionResource {
				return []*v1alpha1.ExtensionResource{rawResource(`{"apiVersion": "examples.portcullis.dev/v1alpha1", "kind": "BasicAuthFilter",
					"metadata": {"name": "staff", "namespace": "shop"}, "spec": {"realm": "ops"}, "status": {"conditions": []}}`)}
			},
			want: map[string]string{"htpasswd.portcullis.dev/realm": "ops", "route": "HTTPRoute/shop/store", "basicauth-filter": "shop/staff"},
		},
		{
			name: "two filters",
			resources: func(t *testing.T) []*v1alpha1.ExtensionResource {
				return []*v1alpha1.ExtensionResource{resource(t, "staff", map[string]any{}), resource(t, "ops", map[string]any{})}
			},
			wantCode: codes.InvalidArgument,
			wantErr:  []string{"HTTPRoute shop/store rule 0", "2 BasicAuthFilters", "shop/staff", "shop/ops"},
		},
		{
			name:      "none",
			resources: func(t *testing.T) []*v1alpha1.ExtensionResource { return nil },
			wantCode:  codes.InvalidArgument,
			wantErr:   []string{"no BasicAuthFilter"},
		},
		{
			name: "unknown field",
			resources: func(t *testing.T) []*v1alpha1.ExtensionResource {
				return []*v1alpha1.ExtensionResource{resource(t, "staff", map[string]any{"relm": "staff"})}
			},
			wantCode: codes.InvalidArgument,
			wantErr:  []string{"BasicAuthFilter shop/staff", `unknown field "spec.relm"`},
		},
		{
			name: "wrong type",
			resources: func(t *testing.T) []*v1alpha1.ExtensionResource {
				return []*v1alpha1.ExtensionResource{resource(t, "staff", map[string]any{"disabled": "yes"})}
			},
			wantCode: codes.InvalidArgument,
			wantErr:  []string{"BasicAuthFilter shop/staff", "spec.disabled"},
		},
		{
			name: "bad realm",
			resources: func(t *testing.T) []*v1alpha1.ExtensionResource {
				return []*v1alpha1.ExtensionResource{resource(t, "staff", map[string]any{"realm": `st"aff`})}
			},
			wantCode: codes.InvalidArgument,
			wantErr:  []string{"BasicAuthFilter shop/staff", "spec.realm"},
		},
		{
			name: "realm *",
			resources: func(t *testing.T) []*v1alpha1.ExtensionResource {
				return []*v1alpha1.ExtensionResource{resource(t, "staff", map[string]any{"realm": "*"})}
			},
			wantCode: codes.InvalidArgument,
			wantErr:  []string{"BasicAuthFilter shop/staff", "spec.realm"},
		},
		{
			name: "the auth server's key in context",
			resources: func(t *testing.T) []*v1alpha1.ExtensionResource {
				return []*v1alpha1.ExtensionResource{resource(t, "staff", map[string]any{"context": map[string]any{"htpasswd.portcullis.dev/realm": "x"}})}
			},
			wantCode: codes.InvalidArgument,
			wantErr:  []string{"BasicAuthFilter shop/staff", `spec.context["htpasswd.portcullis.dev/realm"]`, "spec.realm"},
		},
		{
			name: "reserved key in context",
			resources: func(t *testing.T) []*v1alpha1.ExtensionResource {
				return []*v1alpha1.ExtensionResource{resource(t, "staff", map[string]any{"context": map[string]any{"route": "x"}})}
			},
			wantCode: codes.InvalidArgument,
			wantErr:  []string{"BasicAuthFilter shop/staff", `spec.context["route"]`, "reserved"},
		},
		{
			name: "control character in a context value",
			resources: func(t *testing.T) []*v1alpha1.ExtensionResource {
				return []*v1alpha1.ExtensionResource{resource(t, "staff", map[string]any{"context": map[string]any{"team": "a\r\nb"}})}
			},
			wantCode: codes.InvalidArgument,
			wantErr:  []string{"BasicAuthFilter shop/staff", `spec.context["team"]`, "control character"},
		},
		{
			name: "another kind",
			resources: func(t *testing.T) []*v1alpha1.ExtensionResource {
				return []*v1alpha1.ExtensionResource{rawResource(`{"apiVersion": "example.vendor.io/v1", "kind": "RetryPolicy", "metadata": {"name": "fast", "namespace": "shop"}}`)}
			},
			wantCode: codes.InvalidArgument,
			wantErr:  []string{"RetryPolicy shop/fast", "not a examples.portcullis.dev/v1alpha1 BasicAuthFilter"},
		},
		{
			name: "not JSON",
			resources: func(t *testing.T) []*v1alpha1.ExtensionResource {
				return []*v1alpha1.ExtensionResource{rawResource(`spec: {}`)}
			},
			wantCode: codes.InvalidArgument,
			wantErr:  []string{"HTTPRoute shop/store rule 0", "invalid BasicAuthFilter"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := route(t)
			req := &v1alpha1.PostRouteModifyRequest{Route: proto.Clone(in).(*routev3.Route), Context: routeContext, ExtensionResources: tt.resources(t)}
			resp, err := c.PostRouteModify(ctxT(t), req)
			if tt.wantCode != codes.OK {
				if status.Code(err) != tt.wantCode {
					t.Fatalf("err = %v, want code %v", err, tt.wantCode)
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(status.Convert(err).Message(), w) {
						t.Errorf("err = %v, want one containing %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			r := resp.GetRoute()
			validate(t, r)
			if tt.want == nil {
				if !proto.Equal(r, in) {
					t.Errorf("the route changed:\n%v\nwas:\n%v", r, in)
				}
				return
			}
			// Only the extension's per-route setting is added.
			got := proto.Clone(r).(*routev3.Route)
			delete(got.TypedPerFilterConfig, basicauth.FilterName)
			if !proto.Equal(got, in) {
				t.Errorf("more than the per-route setting changed:\n%v\nwas:\n%v", r, in)
			}
			pr := &extauthzv3.ExtAuthzPerRoute{}
			if err := r.GetTypedPerFilterConfig()[basicauth.FilterName].UnmarshalTo(pr); err != nil {
				t.Fatal(err)
			}
			validate(t, pr)
			if pr.GetDisabled() {
				t.Error("disabled")
			}
			ce := pr.GetCheckSettings().GetContextExtensions()
			if len(ce) != len(tt.want) {
				t.Errorf("context_extensions = %v, want %v", ce, tt.want)
			}
			for k, v := range tt.want {
				if ce[k] != v {
					t.Errorf("context_extensions[%q] = %q, want %q", k, ce[k], v)
				}
			}

			// Deterministic: the same request, the same answer.
			req.Route = proto.Clone(in).(*routev3.Route)
			again, err := c.PostRouteModify(ctxT(t), req)
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(again.GetRoute(), r) {
				t.Error("the same request, another answer")
			}
		})
	}
}

// The hooks the extension does not implement answer with their input.
func TestPassThrough(t *testing.T) {
	c := client(t)
	vh := &routev3.VirtualHost{Name: "shop.example.com", Domains: []string{"shop.example.com"}, Routes: []*routev3.Route{route(t)}}
	vr, err := c.PostVirtualHostModify(ctxT(t), &v1alpha1.PostVirtualHostModifyRequest{VirtualHost: vh})
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(vr.GetVirtualHost(), vh) {
		t.Error("PostVirtualHostModify changed the virtual host")
	}
	cl := &clusterv3.Cluster{Name: "backend/shop/thing"}
	cr, err := c.PostClusterModify(ctxT(t), &v1alpha1.PostClusterModifyRequest{Cluster: cl})
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(cr.GetCluster(), cl) {
		t.Error("PostClusterModify changed the cluster")
	}
	tm := &v1alpha1.PostTranslateModifyRequest{Clusters: []*clusterv3.Cluster{cl}, Listeners: []*listenerv3.Listener{listener("ingress_http", 8080)}}
	tr, err := c.PostTranslateModify(ctxT(t), tm)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(tr.GetClusters()[0], cl) || len(tr.GetClusters()) != 1 || len(tr.GetListeners()) != 1 {
		t.Error("PostTranslateModify changed the configuration")
	}
}
