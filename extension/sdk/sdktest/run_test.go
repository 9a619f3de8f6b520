package sdktest_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

	"github.com/portcullis/portcullis/extension/api/v1alpha1"
	"github.com/portcullis/portcullis/extension/sdk"
	"github.com/portcullis/portcullis/extension/sdk/sdktest"
)

// Run calls the hooks in Portcullis's order, PostRouteModify with the
// route's hostnames filled in, PostVirtualHostModify with the changed
// route, and applies a dropped virtual host.
func TestRun(t *testing.T) {
	var mu sync.Mutex
	var order []string
	note := func(s string) {
		mu.Lock()
		order = append(order, s)
		mu.Unlock()
	}
	srv := &sdk.Server{
		TranslateInsert: func(context.Context, *v1alpha1.PostTranslateInsertRequest) (*v1alpha1.PostTranslateInsertResponse, error) {
			note("insert")
			return nil, nil
		},
		RouteModify: func(_ context.Context, req *v1alpha1.PostRouteModifyRequest) (*v1alpha1.PostRouteModifyResponse, error) {
			note("route " + strings.Join(req.GetContext().GetHostnames(), ","))
			r := req.GetRoute()
			r.RequestHeadersToRemove = []string{"x-secret"}
			return &v1alpha1.PostRouteModifyResponse{Route: r}, nil
		},
		VirtualHostModify: func(_ context.Context, req *v1alpha1.PostVirtualHostModifyRequest) (*v1alpha1.PostVirtualHostModifyResponse, error) {
			vh := req.GetVirtualHost()
			note("vhost " + vh.GetName() + " " + strings.Join(vh.GetRoutes()[0].GetRequestHeadersToRemove(), ","))
			if vh.GetName() == "drop.example.com" {
				return nil, nil
			}
			return &v1alpha1.PostVirtualHostModifyResponse{VirtualHost: vh}, nil
		},
		TranslateModify: func(_ context.Context, req *v1alpha1.PostTranslateModifyRequest) (*v1alpha1.PostTranslateModifyResponse, error) {
			note("all")
			return &v1alpha1.PostTranslateModifyResponse{RouteConfigurations: req.GetRouteConfigurations()}, nil
		},
	}
	rt := func(name string) *routev3.Route {
		return &routev3.Route{Name: name, Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
			Action: &routev3.Route_DirectResponse{DirectResponse: &routev3.DirectResponseAction{Status: 200}}}
	}
	out := sdktest.Run(t, srv, sdktest.Config{
		RouteConfigurations: []*routev3.RouteConfiguration{{Name: "rc", VirtualHosts: []*routev3.VirtualHost{
			{Name: "a.example.com", Domains: []string{"a.example.com", "a.example.com:*"}, Routes: []*routev3.Route{rt("ref")}},
			{Name: "drop.example.com", Domains: []string{"drop.example.com"}, Routes: []*routev3.Route{rt("")}},
		}}},
		Routes: []sdktest.RouteInput{{Name: "ref", Context: &v1alpha1.RouteContext{RouteKind: "HTTPRoute"}}},
	})
	want := []string{"insert", "route a.example.com", "vhost a.example.com x-secret", "vhost drop.example.com ", "all"}
	if !slices.Equal(order, want) {
		t.Errorf("calls %q, want %q", order, want)
	}
	if vhs := out.RouteConfigurations[0].GetVirtualHosts(); len(vhs) != 1 || vhs[0].GetName() != "a.example.com" {
		t.Errorf("virtual hosts after the hooks: %v", vhs)
	}
}

// Run completes a backend's cluster with PostClusterModify, before the
// route hooks, with the object it stands for.
func TestRunBackends(t *testing.T) {
	var got string
	srv := &sdk.Server{
		ClusterModify: func(_ context.Context, req *v1alpha1.PostClusterModifyRequest) (*v1alpha1.PostClusterModifyResponse, error) {
			u, err := sdk.Unstructured(req.GetBackend())
			if err != nil {
				return nil, err
			}
			got = u.GetName()
			c := req.GetCluster()
			c.ClusterDiscoveryType = &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STRICT_DNS}
			c.LoadAssignment = &endpointv3.ClusterLoadAssignment{ClusterName: c.GetName()}
			return &v1alpha1.PostClusterModifyResponse{Cluster: c}, nil
		},
	}
	const name = "extension-backend/bucket/example.vendor.io/shop/assets"
	out := sdktest.Run(t, srv, sdktest.Config{
		Clusters: []*clusterv3.Cluster{{Name: name, ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC}}, {Name: "other"}},
		Backends: map[string]*v1alpha1.ExtensionResource{name: sdktest.Resource(t, map[string]any{
			"apiVersion": "example.vendor.io/v1", "kind": "Bucket", "metadata": map[string]any{"name": "assets", "namespace": "shop"}})},
	})
	if got != "assets" {
		t.Errorf("PostClusterModify got backend %q, want assets", got)
	}
	for _, c := range out.Clusters {
		if (c.GetName() == name) != (c.GetType() == clusterv3.Cluster_STRICT_DNS) {
			t.Errorf("cluster %s: type %v", c.GetName(), c.GetType())
		}
	}
}
