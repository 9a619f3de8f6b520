package gatewayapi

import (
	"testing"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// A filter is configured by the field named as its type; another type's
// field beside it (which the API server refuses, objects read from files
// did not go through) must not be silently ignored: an externalAuth or a
// urlRewrite the owner wrote would not be applied.
func TestFiltersRefuseOtherTypesFields(t *testing.T) {
	hm := &gwapiv1.HTTPHeaderFilter{Set: []gwapiv1.HTTPHeader{{Name: "x-a", Value: "1"}}}
	for _, f := range []gwapiv1.HTTPRouteFilter{
		{Type: gwapiv1.HTTPRouteFilterRequestHeaderModifier, RequestHeaderModifier: hm, ExternalAuth: &gwapiv1.HTTPExternalAuthFilter{}},
		{Type: gwapiv1.HTTPRouteFilterRequestHeaderModifier, RequestHeaderModifier: hm, CORS: &gwapiv1.HTTPCORSFilter{}},
		{Type: gwapiv1.HTTPRouteFilterRequestHeaderModifier, RequestHeaderModifier: hm, URLRewrite: &gwapiv1.HTTPURLRewriteFilter{}},
		{Type: gwapiv1.HTTPRouteFilterResponseHeaderModifier, ResponseHeaderModifier: hm, RequestHeaderModifier: hm},
		{Type: gwapiv1.HTTPRouteFilterResponseHeaderModifier, ResponseHeaderModifier: hm, ExtensionRef: &gwapiv1.LocalObjectReference{Kind: "X", Name: "x"}},
	} {
		b := &routeBuild{}
		var x ir.Route
		if b.filters([]gwapiv1.HTTPRouteFilter{f}, "spec.rules[0].filters", &x) {
			t.Errorf("rule filter %+v: accepted, another type's field ignored", f)
		}
		if len(b.dropped) == 0 {
			t.Errorf("rule filter %+v: no condition says why", f)
		}
		b = &routeBuild{}
		if _, _, ok := b.backendFilters([]gwapiv1.HTTPRouteFilter{f}, "spec.rules[0].backendRefs[0].filters"); ok {
			t.Errorf("backend filter %+v: accepted, another type's field ignored", f)
		}
	}
	// The filter's own field alone is fine.
	b := &routeBuild{}
	var x ir.Route
	if !b.filters([]gwapiv1.HTTPRouteFilter{{Type: gwapiv1.HTTPRouteFilterRequestHeaderModifier, RequestHeaderModifier: hm}}, "f", &x) || len(b.dropped) > 0 {
		t.Errorf("a plain header modifier is refused: %v", b.dropped)
	}
}

// percent and fraction together (the API server refuses them): which one
// was meant is unknown, the mirror is left out.
func TestMirrorPercentAndFraction(t *testing.T) {
	b := &routeBuild{}
	var x ir.Route
	p := int32(10)
	b.mirror(&gwapiv1.HTTPRequestMirrorFilter{Percent: &p, Fraction: &gwapiv1.Fraction{Numerator: 1}}, "f", &x)
	if len(x.Mirrors) > 0 || len(b.dropped) == 0 {
		t.Errorf("mirror with percent and fraction: mirrors %v, conditions %v", x.Mirrors, b.dropped)
	}
}

// A redirect that sets neither scheme nor port names the listener's port
// (unless it is its scheme's default); the routes, shared by the
// listeners a route attaches to, are not changed.
func TestWithListenerPort(t *testing.T) {
	for _, tc := range []struct {
		name string
		port int32
		tls  bool
		rd   ir.Redirect
		want uint32
	}{
		{"neither, listener 8080", 8080, false, ir.Redirect{Hostname: "a.example.com"}, 8080},
		{"neither, HTTPS listener 8443", 8443, true, ir.Redirect{}, 8443},
		{"neither, listener 80", 80, false, ir.Redirect{Hostname: "a.example.com"}, 0},
		{"neither, HTTPS listener 443", 443, true, ir.Redirect{}, 0},
		{"scheme set: its default port", 8080, false, ir.Redirect{Scheme: "https"}, 0},
		{"port set", 8080, false, ir.Redirect{Port: 9090}, 9090},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rd := tc.rd
			routes := []gwIRRoute{{route: &ir.Route{Redirect: &rd}}, {route: &ir.Route{}}}
			l := &gwListener{spec: gwapiv1.Listener{Port: tc.port}, tls: tc.tls}
			got := withListenerPort(l, routes)
			if p := got[0].route.Redirect.Port; p != tc.want {
				t.Errorf("port %d, want %d", p, tc.want)
			}
			if got[1].route.Redirect != nil {
				t.Errorf("a route without a redirect got one")
			}
			if rd != tc.rd || routes[0].route.Redirect != &rd {
				t.Errorf("the shared route changed: %+v", rd)
			}
		})
	}
}
