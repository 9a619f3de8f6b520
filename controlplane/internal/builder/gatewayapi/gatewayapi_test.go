package gatewayapi

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

func TestIntersectHostnames(t *testing.T) {
	for _, tc := range []struct {
		name     string
		listener string
		route    []string
		want     []string
	}{
		{"neither has one: any host", "", nil, []string{"*"}},
		{"listener without: the route's", "", []string{"a.example.com", "*.example.org"}, []string{"a.example.com", "*.example.org"}},
		{"route without: the listener's", "a.example.com", nil, []string{"a.example.com"}},
		{"the same name", "a.example.com", []string{"a.example.com"}, []string{"a.example.com"}},
		{"different names", "a.example.com", []string{"b.example.com"}, nil},
		{"a name under the listener's wildcard", "*.example.com", []string{"a.example.com", "a.b.example.com"}, []string{"a.example.com", "a.b.example.com"}},
		{"the wildcard's own domain is not under it", "*.example.com", []string{"example.com"}, nil},
		{"the route's wildcard matches the listener's name", "a.example.com", []string{"*.example.com"}, []string{"a.example.com"}},
		{"a narrower wildcard of the route", "*.example.com", []string{"*.b.example.com"}, []string{"*.b.example.com"}},
		{"a wider wildcard of the route", "*.b.example.com", []string{"*.example.com"}, []string{"*.b.example.com"}},
		{"the same wildcard", "*.example.com", []string{"*.example.com"}, []string{"*.example.com"}},
		{"unrelated wildcards", "*.example.com", []string{"*.example.org"}, nil},
		{"a suffix that is not a label", "*.example.com", []string{"aexample.com"}, nil},
		{"repeated intersections once", "a.example.com", []string{"*.example.com", "a.example.com"}, []string{"a.example.com"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := intersectHostnames(tc.listener, tc.route); !slices.Equal(got, tc.want) {
				t.Errorf("intersectHostnames(%q, %q) = %q, want %q", tc.listener, tc.route, got, tc.want)
			}
		})
	}
}

func TestEnvoyPort(t *testing.T) {
	for _, tc := range []struct {
		port int32
		want uint32
	}{{80, 8080}, {443, 8443}, {1, 8001}, {1023, 9023}, {1024, 1024}, {8080, 8080}, {65535, 65535}} {
		if got := envoyPort(tc.port); got != tc.want {
			t.Errorf("envoyPort(%d) = %d, want %d", tc.port, got, tc.want)
		}
	}
}

func TestBestListener(t *testing.T) {
	any, wide, narrow, exact := &gwListener{}, &gwListener{hostname: "*.example.com"}, &gwListener{hostname: "*.b.example.com"}, &gwListener{hostname: "a.b.example.com"}
	all := []*gwListener{any, wide, narrow, exact}
	for _, tc := range []struct {
		host string
		want *gwListener
	}{
		{"a.b.example.com", exact},
		{"c.b.example.com", narrow},
		{"*.b.example.com", narrow},
		{"c.example.com", wide},
		{"example.org", any},
		{"*", any},
	} {
		if got := bestListener(all, tc.host); got != tc.want {
			t.Errorf("bestListener(%q) = %+v, want %+v", tc.host, got, tc.want)
		}
	}
	if got := bestListener([]*gwListener{exact}, "c.example.com"); got != nil {
		t.Errorf("no listener matches: got %+v", got)
	}
}

func TestAllowedRoutes(t *testing.T) {
	g := &gatewayStage{namespaceLabels: map[string]map[string]string{"team-a": {"access": "yes"}, "team-b": {}}}
	from := func(f gwapiv1.FromNamespaces, sel *metav1.LabelSelector) *gwapiv1.AllowedRoutes {
		return &gwapiv1.AllowedRoutes{Namespaces: &gwapiv1.RouteNamespaces{From: &f, Selector: sel}}
	}
	group := gwapiv1.Group("example.com")
	for _, tc := range []struct {
		name      string
		allowed   *gwapiv1.AllowedRoutes
		protocol  gwapiv1.ProtocolType
		namespace string
		kind      gwapiv1.Kind
		want      bool
		badKinds  int
	}{
		{"default: Same, same namespace", nil, gwapiv1.HTTPProtocolType, "infra", kindHTTPRoute, true, 0},
		{"default: Same, other namespace", nil, gwapiv1.HTTPProtocolType, "team-a", kindHTTPRoute, false, 0},
		{"default kinds include GRPCRoute", nil, gwapiv1.HTTPSProtocolType, "infra", kindGRPCRoute, true, 0},
		{"All", from(gwapiv1.NamespacesFromAll, nil), gwapiv1.HTTPProtocolType, "team-b", kindHTTPRoute, true, 0},
		{"None", from(gwapiv1.NamespacesFromNone, nil), gwapiv1.HTTPProtocolType, "infra", kindHTTPRoute, false, 0},
		{"Selector matches", from(gwapiv1.NamespacesFromSelector, &metav1.LabelSelector{MatchLabels: map[string]string{"access": "yes"}}), gwapiv1.HTTPProtocolType, "team-a", kindHTTPRoute, true, 0},
		{"Selector does not match", from(gwapiv1.NamespacesFromSelector, &metav1.LabelSelector{MatchLabels: map[string]string{"access": "yes"}}), gwapiv1.HTTPProtocolType, "team-b", kindHTTPRoute, false, 0},
		{"Selector on a namespace not given", from(gwapiv1.NamespacesFromSelector, &metav1.LabelSelector{MatchLabels: map[string]string{"access": "yes"}}), gwapiv1.HTTPProtocolType, "unknown", kindHTTPRoute, false, 0},
		{"Selector without selector", from(gwapiv1.NamespacesFromSelector, nil), gwapiv1.HTTPProtocolType, "team-a", kindHTTPRoute, false, 0},
		{"kinds restrict", &gwapiv1.AllowedRoutes{Kinds: []gwapiv1.RouteGroupKind{{Kind: kindGRPCRoute}}}, gwapiv1.HTTPProtocolType, "infra", kindHTTPRoute, false, 0},
		{"unsupported kinds are reported, the others kept", &gwapiv1.AllowedRoutes{Kinds: []gwapiv1.RouteGroupKind{{Kind: "TCPRoute"}, {Group: &group, Kind: kindHTTPRoute}, {Kind: kindHTTPRoute}}}, gwapiv1.HTTPProtocolType, "infra", kindHTTPRoute, true, 2},
		{"an unsupported protocol allows nothing", nil, "SCTP", "infra", kindHTTPRoute, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := &gwGateway{gw: &gwapiv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "gw"}}}
			l := &gwListener{gw: x, spec: gwapiv1.Listener{Protocol: tc.protocol, AllowedRoutes: tc.allowed}}
			if tc.protocol == "SCTP" {
				l.accepted.add(string(gwapiv1.ListenerReasonUnsupportedProtocol), "tcp")
			}
			g.allowedRoutes(l)
			if got := l.allowsKind(tc.kind) && g.namespaceAllowed(l, tc.namespace); got != tc.want {
				t.Errorf("allowed = %v, want %v (kinds %v, from %s, problems %v)", got, tc.want, l.kinds, l.from, l.accepted)
			}
			if len(l.badKinds) != tc.badKinds {
				t.Errorf("bad kinds = %v, want %d", l.badKinds, tc.badKinds)
			}
		})
	}
	// An empty selector selects every namespace, as Kubernetes reads it.
	l := &gwListener{gw: &gwGateway{gw: &gwapiv1.Gateway{}}, from: gwapiv1.NamespacesFromSelector, selector: labels.Everything()}
	if !g.namespaceAllowed(l, "anything") {
		t.Error("an empty selector must select every namespace")
	}
}

// The precedence of the Gateway API's routes within a host.
func TestPrecedence(t *testing.T) {
	old := &gwapiv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "z-old", CreationTimestamp: metav1.NewTime(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))}}
	young := &gwapiv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a-young", CreationTimestamp: metav1.NewTime(time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC))}}
	fileA := &gwapiv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}}
	fileB := &gwapiv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b"}}
	method := ir.HeaderMatch{Name: methodHeader, Kind: "exact", Value: "GET"}
	header := ir.HeaderMatch{Name: "x", Kind: "exact", Value: "1"}
	query := ir.QueryParamMatch{Name: "q", Kind: "exact", Value: "1"}
	r := func(name string, x ir.Route, obj *gwapiv1.HTTPRoute, rule, match int) gwIRRoute {
		x.Origins = ir.Origins{{Name: name}}
		return gwIRRoute{route: &x, obj: obj, kind: kindHTTPRoute, rule: rule, match: match}
	}
	// In the expected order.
	want := []gwIRRoute{
		r("exact long", ir.Route{PathKind: ir.PathExact, Path: "/a/b/c"}, fileB, 0, 0),
		r("exact short", ir.Route{PathKind: ir.PathExact, Path: "/a"}, fileB, 0, 0),
		r("regex", ir.Route{PathKind: ir.PathRegex, Path: "/a/.*"}, fileB, 0, 0),
		r("longest prefix", ir.Route{Path: "/a/b"}, fileB, 0, 0),
		r("method", ir.Route{Path: "/a", Headers: []ir.HeaderMatch{method}}, fileB, 0, 0),
		r("two headers", ir.Route{Path: "/a", Headers: []ir.HeaderMatch{header, {Name: "y", Kind: "exact"}}}, fileB, 0, 0),
		r("a header beats a method's header count", ir.Route{Path: "/a", Headers: []ir.HeaderMatch{header}}, fileB, 0, 0),
		r("query", ir.Route{Path: "/a", QueryParams: []ir.QueryParamMatch{query}}, fileB, 0, 0),
		r("older route", ir.Route{Path: "/a"}, old, 0, 0),
		r("younger route", ir.Route{Path: "/a"}, young, 0, 0),
		r("no age: by name", ir.Route{Path: "/a"}, fileA, 1, 0),
		r("then the rule: rule 0, match 1", ir.Route{Path: "/a"}, fileB, 0, 1),
		r("rule 1, match 0", ir.Route{Path: "/a"}, fileB, 1, 0),
		r("catch-all", ir.Route{Path: "/"}, fileA, 0, 0),
	}
	got := slices.Clone(want)
	slices.Reverse(got)
	sortByPrecedence(got)
	for i := range want {
		if got[i].route.Origins[0].Name != want[i].route.Origins[0].Name {
			var names []string
			for _, g := range got {
				names = append(names, g.route.Origins[0].Name)
			}
			t.Fatalf("order:\n%q", names)
		}
	}
}

func TestGatewayTimeouts(t *testing.T) {
	d := func(s string) *gwapiv1.Duration { v := gwapiv1.Duration(s); return &v }
	for _, tc := range []struct {
		name             string
		in               gwapiv1.HTTPRouteTimeouts
		request, backend time.Duration
		err              bool
	}{
		{"both", gwapiv1.HTTPRouteTimeouts{Request: d("1m30s"), BackendRequest: d("500ms")}, 90 * time.Second, 500 * time.Millisecond, false},
		{"zero is no timeout", gwapiv1.HTTPRouteTimeouts{Request: d("0s")}, 0, 0, false},
		{"fractions are not the API's format", gwapiv1.HTTPRouteTimeouts{Request: d("1.5s")}, 0, 0, true},
		{"backend longer than request", gwapiv1.HTTPRouteTimeouts{Request: d("1s"), BackendRequest: d("2s")}, 0, 0, true},
		{"a backend without timeout under a request's", gwapiv1.HTTPRouteTimeouts{Request: d("1s"), BackendRequest: d("0s")}, 0, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, backend, err := gatewayTimeouts(&tc.in)
			if (err != nil) != tc.err {
				t.Fatalf("error = %v, want error %v", err, tc.err)
			}
			if err == nil && (core.PtrValue(req) != tc.request || core.PtrValue(backend) != tc.backend) {
				t.Errorf("got %v, %v", core.PtrValue(req), core.PtrValue(backend))
			}
		})
	}
}

func TestGRPCMatch(t *testing.T) {
	s := func(v string) *string { return &v }
	regex := gwapiv1.GRPCMethodMatchRegularExpression
	for _, tc := range []struct {
		name string
		in   *gwapiv1.GRPCMethodMatch
		kind ir.PathMatchKind
		path string
		err  bool
	}{
		{"no method: every request", nil, ir.PathPrefix, "/", false},
		{"service and method", &gwapiv1.GRPCMethodMatch{Service: s("pkg.Svc"), Method: s("Get")}, ir.PathExact, "/pkg.Svc/Get", false},
		{"service", &gwapiv1.GRPCMethodMatch{Service: s("pkg.Svc")}, ir.PathPrefix, "/pkg.Svc", false},
		{"method", &gwapiv1.GRPCMethodMatch{Method: s("Get")}, ir.PathRegex, "/[^/]+/Get", false},
		{"regular expressions", &gwapiv1.GRPCMethodMatch{Type: &regex, Service: s("pkg\\..*")}, ir.PathRegex, "/(?:pkg\\..*)/[^/]+", false},
		{"neither", &gwapiv1.GRPCMethodMatch{}, 0, "", true},
		{"not a service name", &gwapiv1.GRPCMethodMatch{Service: s("pkg/Svc")}, 0, "", true},
		{"a bad regular expression", &gwapiv1.GRPCMethodMatch{Type: &regex, Method: s("(")}, 0, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := grpcMatch(gwapiv1.GRPCRouteMatch{Method: tc.in})
			if (err != nil) != tc.err {
				t.Fatalf("error = %v, want error %v", err, tc.err)
			}
			if err == nil && (got.PathKind != tc.kind || got.Path != tc.path) {
				t.Errorf("got %v %q, want %v %q", got.PathKind, got.Path, tc.kind, tc.path)
			}
		})
	}
}
