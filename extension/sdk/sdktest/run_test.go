package sdktest_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

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
