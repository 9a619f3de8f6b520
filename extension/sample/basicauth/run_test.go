package basicauth_test

import (
	"slices"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	extauthzv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_authz/v3"
	"google.golang.org/protobuf/proto"

	"github.com/portcullis/portcullis/extension/api/v1alpha1"
	"github.com/portcullis/portcullis/extension/sample/basicauth"
	"github.com/portcullis/portcullis/extension/sdk/sdktest"
)

// The extension's whole effect on a small configuration, every hook in
// Portcullis's order (sdktest.Run): its cluster added, its filter
// (disabled) on the listener, enabled on the route that references a
// BasicAuthFilter only.
func TestWholeEffect(t *testing.T) {
	protected := route(t)
	plain := proto.Clone(protected).(*routev3.Route)
	plain.Name = ""
	plain.Match = &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}}
	rc := &routev3.RouteConfiguration{Name: "ingress_http", VirtualHosts: []*routev3.VirtualHost{{
		Name: "shop.example.com", Domains: []string{"shop.example.com", "shop.example.com:*"},
		Routes: []*routev3.Route{protected, plain},
	}}}
	l := listener("ingress_http", 8080, &listenerv3.FilterChain{Filters: []*listenerv3.Filter{
		hcmFilter(t, "ingress_http", portcullisAuthz(t, portcullisExtAuthz), router(t)),
	}})
	ctx := proto.Clone(routeContext).(*v1alpha1.RouteContext)
	ctx.Hostnames = nil // filled in from the virtual host's domains
	in := sdktest.Config{
		Listeners:           []*listenerv3.Listener{l},
		RouteConfigurations: []*routev3.RouteConfiguration{rc},
		Clusters:            []*clusterv3.Cluster{{Name: "service/shop/store/80"}},
		Routes: []sdktest.RouteInput{{
			Name: protected.GetName(), Context: ctx,
			ExtensionResources: []*v1alpha1.ExtensionResource{resource(t, "staff", map[string]any{"realm": "staff"})},
		}},
	}
	before := proto.Clone(rc)
	out := sdktest.Run(t, newExtension(t, "127.0.0.1:19445"), in)

	if !proto.Equal(before, rc) {
		t.Error("Run modified its input")
	}
	var clusters []string
	for _, c := range out.Clusters {
		clusters = append(clusters, c.GetName())
	}
	if !slices.Equal(clusters, []string{basicauth.ClusterName, "service/shop/store/80"}) {
		t.Errorf("clusters %v", clusters)
	}
	if got := httpFilterNames(t, out.Listeners[0]); !slices.Equal(got, []string{portcullisExtAuthz + ",!" + basicauth.FilterName + ",envoy.filters.http.router"}) {
		t.Errorf("HTTP filters %v", got)
	}
	routes := out.RouteConfigurations[0].GetVirtualHosts()[0].GetRoutes()
	per := &extauthzv3.ExtAuthzPerRoute{}
	if err := routes[0].GetTypedPerFilterConfig()[basicauth.FilterName].UnmarshalTo(per); err != nil {
		t.Fatalf("the protected route has no setting of the extension's filter: %v", err)
	}
	if got := per.GetCheckSettings().GetContextExtensions()["htpasswd.portcullis.dev/realm"]; got != "staff" {
		t.Errorf("realm %q, want staff", got)
	}
	if _, ok := routes[1].GetTypedPerFilterConfig()[basicauth.FilterName]; ok {
		t.Error("the route without a BasicAuthFilter has the extension's setting")
	}
}
