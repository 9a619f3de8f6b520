package translator

import (
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/proto"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

func TestRedirect(t *testing.T) {
	scheme := func(s string) *routev3.RedirectAction_SchemeRedirect {
		return &routev3.RedirectAction_SchemeRedirect{SchemeRedirect: s}
	}
	for _, tc := range []struct {
		name string
		in   ir.Redirect
		want *routev3.RedirectAction
	}{
		{"nothing set: 302 to the same URL", ir.Redirect{}, &routev3.RedirectAction{ResponseCode: routev3.RedirectAction_FOUND}},
		{"301", ir.Redirect{StatusCode: 301}, &routev3.RedirectAction{ResponseCode: routev3.RedirectAction_MOVED_PERMANENTLY}},
		{"303", ir.Redirect{StatusCode: 303}, &routev3.RedirectAction{ResponseCode: routev3.RedirectAction_SEE_OTHER}},
		{"307", ir.Redirect{StatusCode: 307}, &routev3.RedirectAction{ResponseCode: routev3.RedirectAction_TEMPORARY_REDIRECT}},
		{"308", ir.Redirect{StatusCode: 308}, &routev3.RedirectAction{ResponseCode: routev3.RedirectAction_PERMANENT_REDIRECT}},
		{"a new scheme without a port: no port_redirect (the request's port is stripped: the scheme's default)",
			ir.Redirect{Scheme: "https"}, &routev3.RedirectAction{SchemeRewriteSpecifier: scheme("https"), ResponseCode: routev3.RedirectAction_FOUND}},
		{"the scheme's default port is left out",
			ir.Redirect{Scheme: "https", Port: 443, StatusCode: 302}, &routev3.RedirectAction{SchemeRewriteSpecifier: scheme("https"), ResponseCode: routev3.RedirectAction_FOUND}},
		{"http and 80 likewise",
			ir.Redirect{Scheme: "http", Port: 80}, &routev3.RedirectAction{SchemeRewriteSpecifier: scheme("http"), ResponseCode: routev3.RedirectAction_FOUND}},
		{"another port is written",
			ir.Redirect{Scheme: "https", Port: 8443}, &routev3.RedirectAction{SchemeRewriteSpecifier: scheme("https"), PortRedirect: 8443, ResponseCode: routev3.RedirectAction_FOUND}},
		{"a port without a scheme is written, even 443 (the request's scheme may be http)",
			ir.Redirect{Port: 443}, &routev3.RedirectAction{PortRedirect: 443, ResponseCode: routev3.RedirectAction_FOUND}},
		{"host and full path",
			ir.Redirect{Hostname: "b.example.com", Path: &ir.PathRewrite{Value: "/new"}, StatusCode: 301},
			&routev3.RedirectAction{HostRedirect: "b.example.com", PathRewriteSpecifier: &routev3.RedirectAction_PathRedirect{PathRedirect: "/new"}, ResponseCode: routev3.RedirectAction_MOVED_PERMANENTLY}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := route(&ir.Route{Path: "/old", Redirect: &tc.in}, routeSettings{})
			if got := r.GetRedirect(); !proto.Equal(got, tc.want) {
				t.Errorf("got  %v\nwant %v", got, tc.want)
			}
		})
	}
}

// A direct response carries the route's response headers (Envoy adds them
// to the responses it makes itself too).
func TestDirectResponseHeaders(t *testing.T) {
	r := route(&ir.Route{Path: "/", DirectResponse: &ir.DirectResponse{Status: 200, Body: "{}"},
		ResponseHeaders: &ir.HeadersPolicy{Set: []ir.HeaderValue{{Name: "content-type", Value: "application/json"}}, Remove: []string{"server"}}}, routeSettings{})
	if r.GetDirectResponse().GetStatus() != 200 || len(r.ResponseHeadersToAdd) != 1 || r.ResponseHeadersToAdd[0].Header.Key != "content-type" || len(r.ResponseHeadersToRemove) != 1 {
		t.Errorf("got %v", r)
	}
}
