package httpproxy

import (
	"reflect"
	"strings"
	"testing"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

func TestRedirectPolicy(t *testing.T) {
	for _, tt := range []struct {
		name    string
		in      contourv1.HTTPRequestRedirectPolicy
		kind    ir.PathMatchKind
		want    *ir.Redirect
		wantErr string
	}{
		{name: "nothing set: 302 to the same URL", want: &ir.Redirect{StatusCode: 302}},
		{name: "everything",
			in:   contourv1.HTTPRequestRedirectPolicy{Scheme: core.PtrTo("https"), Hostname: core.PtrTo("b.example.com"), Port: core.PtrTo(int32(8443)), StatusCode: core.PtrTo(contourv1.RedirectResponseCode(301)), Path: core.PtrTo("/new")},
			want: &ir.Redirect{Scheme: "https", Hostname: "b.example.com", Port: 8443, StatusCode: 301, Path: &ir.PathRewrite{Value: "/new"}}},
		{name: "prefix", in: contourv1.HTTPRequestRedirectPolicy{Prefix: core.PtrTo("/v2")},
			want: &ir.Redirect{StatusCode: 302, Path: &ir.PathRewrite{Prefix: true, Value: "/v2"}}},
		{name: "prefix of an exact match", in: contourv1.HTTPRequestRedirectPolicy{Prefix: core.PtrTo("/v2")}, kind: ir.PathExact,
			want: &ir.Redirect{StatusCode: 302, Path: &ir.PathRewrite{Prefix: true, Value: "/v2"}}},
		{name: "308", in: contourv1.HTTPRequestRedirectPolicy{StatusCode: core.PtrTo(contourv1.RedirectResponseCode(308))}, want: &ir.Redirect{StatusCode: 308}},
		{name: "status 304", in: contourv1.HTTPRequestRedirectPolicy{StatusCode: core.PtrTo(contourv1.RedirectResponseCode(304))}, wantErr: "statusCode 304 must be one of 301, 302, 303, 307, 308"},
		{name: "scheme ftp", in: contourv1.HTTPRequestRedirectPolicy{Scheme: core.PtrTo("ftp")}, wantErr: `scheme "ftp" must be http or https`},
		{name: "wildcard hostname", in: contourv1.HTTPRequestRedirectPolicy{Hostname: core.PtrTo("*.example.com")}, wantErr: "must be a lowercase DNS name"},
		{name: "hostname with a port", in: contourv1.HTTPRequestRedirectPolicy{Hostname: core.PtrTo("example.com:8080")}, wantErr: "must be a lowercase DNS name"},
		{name: "port 0", in: contourv1.HTTPRequestRedirectPolicy{Port: core.PtrTo(int32(0))}, wantErr: "port 0 must be between 1 and 65535"},
		{name: "port 70000", in: contourv1.HTTPRequestRedirectPolicy{Port: core.PtrTo(int32(70000))}, wantErr: "port 70000"},
		{name: "path and prefix", in: contourv1.HTTPRequestRedirectPolicy{Path: core.PtrTo("/a"), Prefix: core.PtrTo("/b")}, wantErr: "path and prefix cannot both be set"},
		{name: "relative path", in: contourv1.HTTPRequestRedirectPolicy{Path: core.PtrTo("a")}, wantErr: `path "a" must start with /`},
		{name: "path with a line break", in: contourv1.HTTPRequestRedirectPolicy{Path: core.PtrTo("/a\r\nX: y")}, wantErr: "line break"},
		{name: "prefix of a regex match", in: contourv1.HTTPRequestRedirectPolicy{Prefix: core.PtrTo("/v2")}, kind: ir.PathRegex, wantErr: "cannot replace the match of a regex path condition"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := redirectPolicy(&tt.in, tt.kind)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestDirectResponsePolicy(t *testing.T) {
	for _, tt := range []struct {
		name    string
		in      contourv1.HTTPDirectResponsePolicy
		want    *ir.DirectResponse
		wantErr string
	}{
		{name: "status and body", in: contourv1.HTTPDirectResponsePolicy{StatusCode: 503, Body: "maintenance"}, want: &ir.DirectResponse{Status: 503, Body: "maintenance"}},
		{name: "200 without a body", in: contourv1.HTTPDirectResponsePolicy{StatusCode: 200}, want: &ir.DirectResponse{Status: 200}},
		{name: "599", in: contourv1.HTTPDirectResponsePolicy{StatusCode: 599}, want: &ir.DirectResponse{Status: 599}},
		{name: "body of 4096 bytes", in: contourv1.HTTPDirectResponsePolicy{StatusCode: 200, Body: strings.Repeat("x", 4096)}, want: &ir.DirectResponse{Status: 200, Body: strings.Repeat("x", 4096)}},
		{name: "status 0", in: contourv1.HTTPDirectResponsePolicy{}, wantErr: "statusCode 0 must be between 200 and 599"},
		{name: "status 199", in: contourv1.HTTPDirectResponsePolicy{StatusCode: 199}, wantErr: "statusCode 199"},
		{name: "status 600", in: contourv1.HTTPDirectResponsePolicy{StatusCode: 600}, wantErr: "statusCode 600"},
		{name: "body too large", in: contourv1.HTTPDirectResponsePolicy{StatusCode: 200, Body: strings.Repeat("x", 4097)}, wantErr: "body is 4097 bytes, more than the 4096"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := directResponsePolicy(&tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

// TestRouteAnswer: what a redirect or direct response cannot be combined
// with is an error naming both; services are not required.
func TestRouteAnswer(t *testing.T) {
	redirect := &contourv1.HTTPRequestRedirectPolicy{}
	direct := &contourv1.HTTPDirectResponsePolicy{StatusCode: 404}
	for _, tt := range []struct {
		name    string
		in      contourv1.Route
		wantErr []string
	}{
		{name: "a redirect alone", in: contourv1.Route{RequestRedirectPolicy: redirect}},
		{name: "a direct response with response headers", in: contourv1.Route{DirectResponsePolicy: direct, ResponseHeadersPolicy: &contourv1.HeadersPolicy{}}},
		{name: "both", in: contourv1.Route{RequestRedirectPolicy: redirect, DirectResponsePolicy: direct},
			wantErr: []string{"requestRedirectPolicy and directResponsePolicy cannot both be set"}},
		{name: "services and a redirect", in: contourv1.Route{RequestRedirectPolicy: redirect, Services: []contourv1.Service{{Name: "s", Port: 80}}},
			wantErr: []string{"services cannot be set with requestRedirectPolicy"}},
		{name: "a rewrite and a direct response", in: contourv1.Route{DirectResponsePolicy: direct, PathRewritePolicy: &contourv1.PathRewritePolicy{}},
			wantErr: []string{"pathRewritePolicy cannot be set with directResponsePolicy"}},
		{name: "response headers and a redirect", in: contourv1.Route{RequestRedirectPolicy: redirect, ResponseHeadersPolicy: &contourv1.HeadersPolicy{}},
			wantErr: []string{"responseHeadersPolicy cannot be set with requestRedirectPolicy"}},
		{name: "request headers and timeouts with a direct response", in: contourv1.Route{DirectResponsePolicy: direct, RequestHeadersPolicy: &contourv1.HeadersPolicy{}, TimeoutPolicy: &contourv1.TimeoutPolicy{}},
			wantErr: []string{"requestHeadersPolicy cannot be set with directResponsePolicy", "timeoutPolicy cannot be set with directResponsePolicy"}},
		{name: "proxying policies with a redirect", in: contourv1.Route{RequestRedirectPolicy: redirect, RetryPolicy: &contourv1.RetryPolicy{},
			LoadBalancerPolicy: &contourv1.LoadBalancerPolicy{}, EnableWebsockets: true},
			wantErr: []string{"retryPolicy cannot be set with requestRedirectPolicy", "loadBalancerPolicy cannot be set with requestRedirectPolicy", "enableWebsockets cannot be set with requestRedirectPolicy"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := &status.Object{}
			rt := &Route{}
			routeAnswer(rt, &tt.in, &routeErrors{st: st, where: "R"})
			if len(st.Errors) != len(tt.wantErr) {
				t.Fatalf("errors %+v, want %q", st.Errors, tt.wantErr)
			}
			for i, e := range st.Errors {
				// Two actions are Contour's reason; a proxying
				// setting beside an answer is ours.
				want := status.ReasonRouteActionsConflict
				if strings.HasPrefix(tt.wantErr[i], "services ") || strings.Contains(tt.wantErr[i], "cannot both be set") {
					want = status.ReasonRouteActionCountNotValid
				}
				if !strings.Contains(e.Message, tt.wantErr[i]) || e.Reason != want {
					t.Errorf("error %+v, want %q", e, tt.wantErr[i])
				}
			}
			if len(tt.wantErr) == 0 && rt.Redirect == nil && rt.DirectResponse == nil {
				t.Error("no answer")
			}
		})
	}
}

func TestReplacePrefix(t *testing.T) {
	rp := func(prefix, replacement string) contourv1.ReplacePrefix {
		return contourv1.ReplacePrefix{Prefix: prefix, Replacement: replacement}
	}
	for _, tt := range []struct {
		name    string
		rs      []contourv1.ReplacePrefix
		kind    ir.PathMatchKind
		path    string
		want    *ir.PathRewrite
		wantErr string
	}{
		{name: "no prefix: every route prefix", rs: []contourv1.ReplacePrefix{rp("", "/v2")}, path: "/api",
			want: &ir.PathRewrite{Prefix: true, Value: "/v2"}},
		{name: "the prefix that is the route's wins over the default", rs: []contourv1.ReplacePrefix{rp("", "/other"), rp("/api", "/v2")}, path: "/api",
			want: &ir.PathRewrite{Prefix: true, Value: "/v2"}},
		{name: "trailing slashes do not count", rs: []contourv1.ReplacePrefix{rp("/api/", "/v2")}, path: "/api",
			want: &ir.PathRewrite{Prefix: true, Value: "/v2"}},
		{name: "the root", rs: []contourv1.ReplacePrefix{rp("/", "/app")}, path: "",
			want: &ir.PathRewrite{Prefix: true, Value: "/app"}},
		{name: "another prefix only: not rewritten", rs: []contourv1.ReplacePrefix{rp("/other", "/v2")}, path: "/api"},
		{name: "exact path", rs: []contourv1.ReplacePrefix{rp("", "/v2")}, kind: ir.PathExact, path: "/a",
			wantErr: "cannot be used with an exact path condition"},
		{name: "regex path", rs: []contourv1.ReplacePrefix{rp("", "/v2")}, kind: ir.PathRegex, path: "/a.*",
			wantErr: "cannot be used with a regex path condition"},
		{name: "two defaults", rs: []contourv1.ReplacePrefix{rp("", "/a"), rp("", "/b")}, path: "/api",
			wantErr: "ambiguous prefix replacement: replacePrefix[0] and replacePrefix[1] both have no prefix"},
		{name: "duplicate prefix", rs: []contourv1.ReplacePrefix{rp("/api", "/a"), rp("/api/", "/b")}, path: "/api",
			wantErr: `duplicate replacement prefix "/api/" in replacePrefix[0] and replacePrefix[1]`},
		{name: "empty replacement", rs: []contourv1.ReplacePrefix{rp("/api", "")}, path: "/api",
			wantErr: `replacePrefix[0].replacement "" must start with /`},
		{name: "relative prefix", rs: []contourv1.ReplacePrefix{rp("api", "/v2")}, path: "/api",
			wantErr: `replacePrefix[0].prefix "api" must start with /`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := replacePrefix(tt.rs, tt.kind, tt.path)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}
