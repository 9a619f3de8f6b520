package sdk_test

import (
	"context"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/portcullis/portcullis/extension/api/v1alpha1"
	"github.com/portcullis/portcullis/extension/sdk"
	"github.com/portcullis/portcullis/extension/sdk/sdktest"
)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func route() *routev3.Route {
	return &routev3.Route{
		Name:  "default/app/0",
		Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/api"}},
		Action: &routev3.Route_Route{Route: &routev3.RouteAction{
			ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: "default/app/8080"},
			Timeout:          durationpb.New(15 * time.Second),
		}},
	}
}

func virtualHost() *routev3.VirtualHost {
	return &routev3.VirtualHost{Name: "app.example.com", Domains: []string{"app.example.com"}, Routes: []*routev3.Route{route()}}
}

func listener() *listenerv3.Listener {
	return &listenerv3.Listener{
		Name: "ingress_http",
		Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
			Address: "0.0.0.0", PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: 8080},
		}}},
	}
}

func cluster() *clusterv3.Cluster {
	return &clusterv3.Cluster{
		Name:                 "default/app/8080",
		ConnectTimeout:       durationpb.New(2 * time.Second),
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS},
	}
}

func secret() *tlsv3.Secret {
	return &tlsv3.Secret{Name: "default/app-tls", Type: &tlsv3.Secret_TlsCertificate{TlsCertificate: &tlsv3.TlsCertificate{
		CertificateChain: &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: "chain"}},
	}}}
}

var (
	origins   = []*v1alpha1.ObjectRef{{Kind: "HTTPProxy", Namespace: "default", Name: "app"}}
	resources = []*v1alpha1.ExtensionResource{{UnstructuredJson: []byte(retryPolicyJSON)}}
)

// TestDefaults calls every hook of a zero Server through gRPC: each returns
// its input unchanged, PostTranslateInsert returns nothing.
func TestDefaults(t *testing.T) {
	c := sdktest.Serve(t, &sdk.Server{})
	tests := []struct {
		name string
		call func(context.Context) (proto.Message, error)
		want proto.Message
	}{{
		name: "PostRouteModify",
		call: func(ctx context.Context) (proto.Message, error) {
			return c.PostRouteModify(ctx, &v1alpha1.PostRouteModifyRequest{
				Route: route(),
				Context: &v1alpha1.RouteContext{RouteKind: "HTTPProxy", RouteName: "app", RouteNamespace: "default",
					Hostnames: []string{"app.example.com"}, RuleIndex: 0},
				ExtensionResources: resources,
			})
		},
		want: &v1alpha1.PostRouteModifyResponse{Route: route()},
	}, {
		name: "PostVirtualHostModify",
		call: func(ctx context.Context) (proto.Message, error) {
			return c.PostVirtualHostModify(ctx, &v1alpha1.PostVirtualHostModifyRequest{
				VirtualHost: virtualHost(), Context: &v1alpha1.VirtualHostContext{Origins: origins},
			})
		},
		want: &v1alpha1.PostVirtualHostModifyResponse{VirtualHost: virtualHost()},
	}, {
		name: "PostHTTPListenerModify",
		call: func(ctx context.Context) (proto.Message, error) {
			return c.PostHTTPListenerModify(ctx, &v1alpha1.PostHTTPListenerModifyRequest{
				Listener: listener(), Context: &v1alpha1.HTTPListenerContext{},
			})
		},
		want: &v1alpha1.PostHTTPListenerModifyResponse{Listener: listener()},
	}, {
		name: "PostTranslateInsert",
		call: func(ctx context.Context) (proto.Message, error) {
			return c.PostTranslateInsert(ctx, &v1alpha1.PostTranslateInsertRequest{})
		},
		want: &v1alpha1.PostTranslateInsertResponse{},
	}, {
		name: "PostTranslateModify",
		call: func(ctx context.Context) (proto.Message, error) {
			return c.PostTranslateModify(ctx, &v1alpha1.PostTranslateModifyRequest{
				Clusters:            []*clusterv3.Cluster{cluster()},
				Secrets:             []*tlsv3.Secret{secret()},
				Listeners:           []*listenerv3.Listener{listener()},
				RouteConfigurations: []*routev3.RouteConfiguration{{Name: "ingress_http", VirtualHosts: []*routev3.VirtualHost{virtualHost()}}},
			})
		},
		want: &v1alpha1.PostTranslateModifyResponse{
			Clusters:            []*clusterv3.Cluster{cluster()},
			Secrets:             []*tlsv3.Secret{secret()},
			Listeners:           []*listenerv3.Listener{listener()},
			RouteConfigurations: []*routev3.RouteConfiguration{{Name: "ingress_http", VirtualHosts: []*routev3.VirtualHost{virtualHost()}}},
		},
	}, {
		name: "PostTranslateModify/empty",
		call: func(ctx context.Context) (proto.Message, error) {
			return c.PostTranslateModify(ctx, &v1alpha1.PostTranslateModifyRequest{})
		},
		want: &v1alpha1.PostTranslateModifyResponse{},
	}, {
		name: "PostClusterModify",
		call: func(ctx context.Context) (proto.Message, error) {
			return c.PostClusterModify(ctx, &v1alpha1.PostClusterModifyRequest{
				Cluster: cluster(), Backend: resources[0], Context: &v1alpha1.ClusterContext{Origins: origins},
			})
		},
		want: &v1alpha1.PostClusterModifyResponse{Cluster: cluster()},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.call(ctxT(t))
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(got, tt.want) {
				t.Errorf("got  %v\nwant %v", got, tt.want)
			}
		})
	}
}

// TestFunctionFields: a set field answers its hook; the others keep their
// defaults.
func TestFunctionFields(t *testing.T) {
	c := sdktest.Serve(t, &sdk.Server{
		RouteModify: func(_ context.Context, req *v1alpha1.PostRouteModifyRequest) (*v1alpha1.PostRouteModifyResponse, error) {
			r := req.GetRoute()
			r.GetRoute().Timeout = durationpb.New(time.Duration(len(req.GetExtensionResources())) * time.Second)
			return &v1alpha1.PostRouteModifyResponse{Route: r}, nil
		},
		VirtualHostModify: func(context.Context, *v1alpha1.PostVirtualHostModifyRequest) (*v1alpha1.PostVirtualHostModifyResponse, error) {
			return nil, nil // drop it
		},
		TranslateInsert: func(context.Context, *v1alpha1.PostTranslateInsertRequest) (*v1alpha1.PostTranslateInsertResponse, error) {
			return &v1alpha1.PostTranslateInsertResponse{Clusters: []*clusterv3.Cluster{{Name: "vendor/sidecar"}}}, nil
		},
	})
	ctx := ctxT(t)

	rr, err := c.PostRouteModify(ctx, &v1alpha1.PostRouteModifyRequest{Route: route(), ExtensionResources: resources})
	if err != nil {
		t.Fatal(err)
	}
	want := route()
	want.GetRoute().Timeout = durationpb.New(time.Second)
	if !proto.Equal(rr.GetRoute(), want) {
		t.Errorf("PostRouteModify: got %v, want %v", rr.GetRoute(), want)
	}

	vr, err := c.PostVirtualHostModify(ctx, &v1alpha1.PostVirtualHostModifyRequest{VirtualHost: virtualHost()})
	if err != nil {
		t.Fatal(err)
	}
	if vr.VirtualHost != nil {
		t.Errorf("PostVirtualHostModify: got %v, want no virtual host (dropped)", vr.VirtualHost)
	}

	ir, err := c.PostTranslateInsert(ctx, &v1alpha1.PostTranslateInsertRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ir.Clusters) != 1 || ir.Clusters[0].Name != "vendor/sidecar" {
		t.Errorf("PostTranslateInsert: got %v", ir)
	}

	cr, err := c.PostClusterModify(ctx, &v1alpha1.PostClusterModifyRequest{Cluster: cluster()})
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(cr.Cluster, cluster()) {
		t.Errorf("PostClusterModify (default): got %v", cr.Cluster)
	}
}

// vendor overrides one hook by method, embedding Server for the others.
type vendor struct{ sdk.Server }

func (vendor) PostHTTPListenerModify(_ context.Context, req *v1alpha1.PostHTTPListenerModifyRequest) (*v1alpha1.PostHTTPListenerModifyResponse, error) {
	l := req.GetListener()
	l.StatPrefix = "vendor"
	return &v1alpha1.PostHTTPListenerModifyResponse{Listener: l}, nil
}

func TestEmbedding(t *testing.T) {
	c := sdktest.Serve(t, &vendor{})
	ctx := ctxT(t)
	lr, err := c.PostHTTPListenerModify(ctx, &v1alpha1.PostHTTPListenerModifyRequest{Listener: listener()})
	if err != nil {
		t.Fatal(err)
	}
	if lr.GetListener().GetStatPrefix() != "vendor" {
		t.Errorf("PostHTTPListenerModify: got %v", lr.GetListener())
	}
	rr, err := c.PostRouteModify(ctx, &v1alpha1.PostRouteModifyRequest{Route: route()})
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(rr.GetRoute(), route()) {
		t.Errorf("PostRouteModify (embedded default): got %v", rr.GetRoute())
	}
}

// TestInvalidAnswers: answers the contract forbids, an error and a panic
// reach the caller as gRPC errors.
func TestInvalidAnswers(t *testing.T) {
	c := sdktest.Serve(t, &sdk.Server{
		RouteModify: func(context.Context, *v1alpha1.PostRouteModifyRequest) (*v1alpha1.PostRouteModifyResponse, error) {
			return &v1alpha1.PostRouteModifyResponse{}, nil
		},
		ClusterModify: func(context.Context, *v1alpha1.PostClusterModifyRequest) (*v1alpha1.PostClusterModifyResponse, error) {
			return nil, nil
		},
		TranslateModify: func(context.Context, *v1alpha1.PostTranslateModifyRequest) (*v1alpha1.PostTranslateModifyResponse, error) {
			return nil, status.Error(codes.Unavailable, "vendor backend down")
		},
		HTTPListenerModify: func(context.Context, *v1alpha1.PostHTTPListenerModifyRequest) (*v1alpha1.PostHTTPListenerModifyResponse, error) {
			panic("bug")
		},
	})
	tests := []struct {
		name string
		call func(context.Context) error
		want codes.Code
	}{
		{"route unset", func(ctx context.Context) error {
			_, err := c.PostRouteModify(ctx, &v1alpha1.PostRouteModifyRequest{Route: route()})
			return err
		}, codes.Internal},
		{"cluster unset", func(ctx context.Context) error {
			_, err := c.PostClusterModify(ctx, &v1alpha1.PostClusterModifyRequest{Cluster: cluster()})
			return err
		}, codes.Internal},
		{"error", func(ctx context.Context) error {
			_, err := c.PostTranslateModify(ctx, &v1alpha1.PostTranslateModifyRequest{})
			return err
		}, codes.Unavailable},
		{"panic", func(ctx context.Context) error {
			_, err := c.PostHTTPListenerModify(ctx, &v1alpha1.PostHTTPListenerModifyRequest{Listener: listener()})
			return err
		}, codes.Internal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call(ctxT(t))
			if got := status.Code(err); got != tt.want {
				t.Errorf("got %v (%v), want %v", got, err, tt.want)
			}
		})
	}
}

func TestHealth(t *testing.T) {
	hc := healthpb.NewHealthClient(sdktest.Conn(t, &sdk.Server{}))
	for _, svc := range []string{"", sdk.ServiceName} {
		resp, err := hc.Check(ctxT(t), &healthpb.HealthCheckRequest{Service: svc})
		if err != nil {
			t.Fatalf("Check(%q): %v", svc, err)
		}
		if resp.Status != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("Check(%q) = %v, want SERVING", svc, resp.Status)
		}
	}
	if sdk.ServiceName != v1alpha1.ExtensionServer_ServiceDesc.ServiceName {
		t.Errorf("ServiceName = %q, want %q", sdk.ServiceName, v1alpha1.ExtensionServer_ServiceDesc.ServiceName)
	}
}
