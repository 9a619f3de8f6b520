package extension

import (
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	extauthzv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_authz/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/portcullis/portcullis/controlplane/internal/translator"
)

func mustAny(t *testing.T, m proto.Message) *anypb.Any {
	t.Helper()
	a, err := anypb.New(m)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// The protection rules of the contract, on ext_authz (guard's property
// suite covers every protecting filter): an answer may not remove,
// disable or change the filter or its per-route settings where a request
// would then pass it.
func TestExtAuthzIsKept(t *testing.T) {
	perRoute := func(disabled bool) map[string]*anypb.Any {
		var c proto.Message = &extauthzv3.ExtAuthzPerRoute{Override: &extauthzv3.ExtAuthzPerRoute_CheckSettings{CheckSettings: &extauthzv3.CheckSettings{ContextExtensions: map[string]string{"tier": "gold"}}}}
		if disabled {
			c = &extauthzv3.ExtAuthzPerRoute{Override: &extauthzv3.ExtAuthzPerRoute_Disabled{Disabled: true}}
		}
		return map[string]*anypb.Any{translator.ExtAuthzFilterName: mustAny(t, c)}
	}
	route := func(prefix string, authz map[string]*anypb.Any) *routev3.Route {
		return &routev3.Route{
			Match:                &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: prefix}},
			Action:               &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: "c"}}},
			TypedPerFilterConfig: authz,
		}
	}
	listener := func(rc string, filters ...string) *listenerv3.Listener {
		h := &hcmv3.HttpConnectionManager{StatPrefix: "x", RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{RouteConfigName: rc}}}
		for _, f := range filters {
			var c proto.Message = wrapperspb.String("a vendor's filter")
			switch f {
			case translator.ExtAuthzFilterName:
				c = &extauthzv3.ExtAuthz{}
			case translator.RouterFilterName:
				c = &routerv3.Router{}
			}
			h.HttpFilters = append(h.HttpFilters, &hcmv3.HttpFilter{Name: f, ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: mustAny(t, c)}})
		}
		return &listenerv3.Listener{
			Name:    "l",
			Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{Address: "0.0.0.0", PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: 8080}}}},
			FilterChains: []*listenerv3.FilterChain{{Filters: []*listenerv3.Filter{{
				Name: "envoy.filters.network.http_connection_manager", ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: mustAny(t, h)},
			}}}},
		}
	}
	const router = translator.RouterFilterName
	inL := listener("rc", translator.ExtAuthzFilterName, router)
	ru := &run{known: map[string]bool{"c": true}, dangling: map[string]bool{}, ours: names{clusters: map[string]bool{"c": true}}, listeners: []proto.Message{inL}}

	in := route("/", perRoute(false))
	inRouteVH := &routev3.VirtualHost{Name: "a", Domains: []string{"a"}, Routes: []*routev3.Route{in}}
	for name, tc := range map[string]struct {
		out  *routev3.Route
		want string
	}{
		"unchanged":    {out: route("/", perRoute(false))},
		"other change": {out: route("/x", perRoute(false))},
		"removed":      {out: route("/", nil), want: "more openly"},
		"disabled":     {out: route("/", perRoute(true)), want: "more openly"},
		// A filter no connection manager has: nothing it could open.
		"settings of another filter": {out: route("/", map[string]*anypb.Any{translator.ExtAuthzFilterName: perRoute(false)[translator.ExtAuthzFilterName], "vendor.filter": perRoute(true)[translator.ExtAuthzFilterName]})},
		"dangling cluster": {out: func() *routev3.Route {
			r := route("/", perRoute(false))
			r.GetRoute().ClusterSpecifier = &routev3.RouteAction_Cluster{Cluster: "d"}
			return r
		}(), want: `cluster "d"`},
		"invalid proto": {out: &routev3.Route{TypedPerFilterConfig: perRoute(false)}, want: "does not validate"},
	} {
		t.Run("route/"+name, func(t *testing.T) { wantErr(t, ru.checkRoute(inRouteVH, 0, tc.out), tc.want) })
	}

	vh := func(routes ...*routev3.Route) *routev3.VirtualHost {
		return &routev3.VirtualHost{Name: "a", Domains: []string{"a"}, Routes: routes}
	}
	inVH := vh(route("/open", perRoute(true)), route("/", perRoute(false)))
	for name, tc := range map[string]struct {
		out  *routev3.VirtualHost
		want string
	}{
		"a route added with the settings of the one it precedes": {out: vh(route("/new", perRoute(false)), route("/open", perRoute(true)), route("/", perRoute(false)))},
		"a route removed":                    {out: vh(route("/", perRoute(false)))},
		"the open route first, catching all": {out: vh(route("/", perRoute(true)), route("/open", perRoute(true)), route("/", perRoute(false))), want: "more openly"},
		"a route without settings":           {out: vh(route("/new", nil), route("/", perRoute(false))), want: "more openly"},
		"domains changed":                    {out: &routev3.VirtualHost{Name: "a", Domains: []string{"b"}}, want: "domains changed"},
	} {
		t.Run("virtual host/"+name, func(t *testing.T) { wantErr(t, ru.checkVirtualHost(inVH, tc.out), tc.want) })
	}

	rcs := []*routev3.RouteConfiguration{
		{Name: "rc", VirtualHosts: []*routev3.VirtualHost{inVH}},
		{Name: "open", VirtualHosts: []*routev3.VirtualHost{vh(route("/", perRoute(true)))}},
	}
	for name, tc := range map[string]struct {
		out  *listenerv3.Listener
		want string
	}{
		"unchanged":                 {out: listener("rc", translator.ExtAuthzFilterName, router)},
		"a filter added":            {out: listener("rc", "vendor.filter", translator.ExtAuthzFilterName, router)},
		"ext_authz removed":         {out: listener("rc", router), want: "ext_authz was removed"},
		"ext_authz after routing":   {out: listener("rc", router, translator.ExtAuthzFilterName), want: "after the router"},
		"an open route config":      {out: listener("open", translator.ExtAuthzFilterName, router), want: "more openly"},
		"a route config not served": {out: listener("gone", translator.ExtAuthzFilterName, router), want: `route configuration "gone" does not exist`},
	} {
		t.Run("listener/"+name, func(t *testing.T) { wantErr(t, ru.checkListener(inL, tc.out, rcs), tc.want) })
	}
}

func wantErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("error: %v", err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Errorf("error %v, want one saying %q", err, want)
	}
}
