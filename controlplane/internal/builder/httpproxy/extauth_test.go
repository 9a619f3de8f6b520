package httpproxy

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

func TestAuthorizationRefProblem(t *testing.T) {
	host := func(fallback bool, ref contourv1.ExtensionServiceReference) *contourv1.VirtualHost {
		return &contourv1.VirtualHost{TLS: &contourv1.TLS{EnableFallbackCertificate: fallback},
			Authorization: &contourv1.AuthorizationServer{ExtensionServiceRef: ref}}
	}
	ok := contourv1.ExtensionServiceReference{Name: "auth"}
	for _, tc := range []struct {
		name   string
		vh     *contourv1.VirtualHost
		secure bool
		want   string // the reason
	}{
		{"a TLS host", host(false, ok), true, ""},
		{"the full apiVersion and kind", host(false, contourv1.ExtensionServiceReference{Name: "auth", APIVersion: "projectcontour.io/v1alpha1", Kind: "ExtensionService"}), true, ""},
		{"an HTTP host", &contourv1.VirtualHost{Authorization: &contourv1.AuthorizationServer{ExtensionServiceRef: ok}}, false, status.ReasonAuthNotPermitted},
		{"with the fallback certificate", host(true, ok), true, status.ReasonTLSIncompatibleFeatures},
		{"another apiVersion", host(false, contourv1.ExtensionServiceReference{Name: "auth", APIVersion: "v1"}), true, status.ReasonAuthBadResourceVersion},
		{"another kind", host(false, contourv1.ExtensionServiceReference{Name: "auth", Kind: "Service"}), true, status.ReasonAuthBadResourceKind},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, msg := authorizationRefProblem(tc.vh, tc.secure); got != tc.want || (got == "") != (msg == "") {
				t.Errorf("reason %q (%q), want %q", got, msg, tc.want)
			}
		})
	}
}

func TestExtAuth(t *testing.T) {
	slowTimeout := 5 * time.Second
	ext := &core.Extension{Cluster: &ir.Cluster{Name: "extension/ns/auth"}, Authority: "auth.ns"}
	slow := &core.Extension{Cluster: ext.Cluster, Authority: ext.Authority, Timeout: &slowTimeout}
	for _, tc := range []struct {
		name    string
		a       contourv1.AuthorizationServer
		ext     *core.Extension
		want    ir.ExtAuth
		wantErr bool
	}{
		{name: "defaults", ext: ext, want: ir.ExtAuth{Cluster: "extension/ns/auth", Authority: "auth.ns", Timeout: core.DefaultAuthTimeout}},
		{name: "the ExtensionService's timeout", ext: slow, want: ir.ExtAuth{Cluster: "extension/ns/auth", Authority: "auth.ns", Timeout: slowTimeout}},
		{name: "the host's timeout wins", a: contourv1.AuthorizationServer{ResponseTimeout: "1s", FailOpen: true}, ext: slow,
			want: ir.ExtAuth{Cluster: "extension/ns/auth", Authority: "auth.ns", Timeout: time.Second, FailOpen: true}},
		{name: "a bad timeout", a: contourv1.AuthorizationServer{ResponseTimeout: "later"}, ext: ext, wantErr: true},
		{name: "a request body of 1 KiB by default", a: contourv1.AuthorizationServer{WithRequestBody: &contourv1.AuthorizationServerBufferSettings{PackAsBytes: true}}, ext: ext,
			want: ir.ExtAuth{Cluster: "extension/ns/auth", Authority: "auth.ns", Timeout: core.DefaultAuthTimeout, WithRequestBody: &ir.BufferSettings{MaxRequestBytes: 1024, PackAsBytes: true}}},
		{name: "an HTTP server", ext: ext, a: contourv1.AuthorizationServer{ServiceType: contourv1.AuthorizationHTTPService, HTTPServerSettings: &contourv1.HTTPAuthorizationServerSettings{
			PathPrefix:                  "/auth",
			AllowedAuthorizationHeaders: []contourv1.HTTPAuthorizationServerAllowedHeaders{{Exact: "x-token"}},
			AllowedUpstreamHeaders:      []contourv1.HTTPAuthorizationServerAllowedHeaders{{Prefix: "x-auth-", IgnoreCase: true}},
		}}, want: ir.ExtAuth{Cluster: "extension/ns/auth", Authority: "auth.ns", Timeout: core.DefaultAuthTimeout, HTTP: &ir.HTTPAuthService{PathPrefix: "/auth",
			AllowedAuthorizationHeaders: []ir.NameMatch{{Kind: "exact", Value: "x-token"}},
			AllowedUpstreamHeaders:      []ir.NameMatch{{Kind: "prefix", Value: "x-auth-", IgnoreCase: true}}}}},
		{name: "an HTTP server without settings", ext: ext, a: contourv1.AuthorizationServer{ServiceType: contourv1.AuthorizationHTTPService},
			want: ir.ExtAuth{Cluster: "extension/ns/auth", Authority: "auth.ns", Timeout: core.DefaultAuthTimeout, HTTP: &ir.HTTPAuthService{}}},
		{name: "grpc said explicitly", ext: ext, a: contourv1.AuthorizationServer{ServiceType: contourv1.AuthorizationGRPCService},
			want: ir.ExtAuth{Cluster: "extension/ns/auth", Authority: "auth.ns", Timeout: core.DefaultAuthTimeout}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := core.ExtAuth(&tc.a, tc.ext)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want %v", err, tc.wantErr)
			}
			if err == nil && !reflect.DeepEqual(*got, tc.want) {
				t.Errorf("extAuth = %+v, want %+v", *got, tc.want)
			}
		})
	}
}

func TestRouteAuth(t *testing.T) {
	global := authScope{enabled: true, global: true, policy: contourv1.AuthorizationPolicy{Context: map[string]string{"a": "1"}}}
	own := authScope{enabled: true, own: true}
	forbidden := global
	forbidden.optOutForbidden = true
	forbiddenHostOff := forbidden
	forbiddenHostOff.policy.Disabled = true
	for _, tc := range []struct {
		name         string
		scope        authScope
		route        contourv1.Route
		wantDisabled bool
		wantContext  map[string]string
		wantErr      bool
		// wantRefused: a warning OptOutForbidden on the route.
		wantRefused bool
	}{
		{name: "no authorization", scope: authScope{}, route: contourv1.Route{AuthPolicy: &contourv1.AuthorizationPolicy{Context: map[string]string{"b": "2"}}}},
		{name: "the enclosing context", scope: global, wantContext: map[string]string{"a": "1"}},
		{name: "the route's context merges over it", scope: global, route: contourv1.Route{AuthPolicy: &contourv1.AuthorizationPolicy{Context: map[string]string{"a": "x", "b": "2"}}},
			wantContext: map[string]string{"a": "x", "b": "2"}},
		{name: "disabled on the route", scope: global, route: contourv1.Route{AuthPolicy: &contourv1.AuthorizationPolicy{Disabled: true}}, wantDisabled: true},
		{name: "the host opted out", scope: authScope{enabled: true, optOut: true}, route: contourv1.Route{AuthPolicy: &contourv1.AuthorizationPolicy{}}, wantDisabled: true},
		{name: "permitInsecure under the host's own authorization", scope: own, route: contourv1.Route{PermitInsecure: true}, wantErr: true},
		{name: "permitInsecure with authorization disabled", scope: own, route: contourv1.Route{PermitInsecure: true, AuthPolicy: &contourv1.AuthorizationPolicy{Disabled: true}}, wantDisabled: true},
		{name: "permitInsecure under the global authorization", scope: global, route: contourv1.Route{PermitInsecure: true}, wantContext: map[string]string{"a": "1"}},
		{name: "a context over HTTP", scope: authScope{enabled: true, own: true, http: true}, route: contourv1.Route{AuthPolicy: &contourv1.AuthorizationPolicy{Context: map[string]string{"b": "2"}}},
			wantContext: map[string]string{"b": "2"}, wantErr: true},
		{name: "disabled over HTTP, with a context it never sends", scope: authScope{enabled: true, own: true, http: true}, route: contourv1.Route{AuthPolicy: &contourv1.AuthorizationPolicy{Disabled: true, Context: map[string]string{"b": "2"}}},
			wantDisabled: true},
		{name: "checked over HTTP", scope: authScope{enabled: true, global: true, http: true}, route: contourv1.Route{AuthPolicy: &contourv1.AuthorizationPolicy{}}},
		{name: "optOut forbidden: disabled on the route is refused", scope: forbidden, route: contourv1.Route{AuthPolicy: &contourv1.AuthorizationPolicy{Disabled: true}},
			wantContext: map[string]string{"a": "1"}, wantRefused: true},
		{name: "optOut forbidden: a host's disabled policy is refused (said on the host)", scope: forbiddenHostOff, wantContext: map[string]string{"a": "1"}},
		{name: "optOut forbidden: the host's own server stays on", scope: authScope{enabled: true, own: true, optOutForbidden: true},
			route: contourv1.Route{AuthPolicy: &contourv1.AuthorizationPolicy{Disabled: true}}, wantRefused: true},
		{name: "optOut forbidden: a route that does not opt out", scope: forbidden, route: contourv1.Route{AuthPolicy: &contourv1.AuthorizationPolicy{Context: map[string]string{"b": "2"}}},
			wantContext: map[string]string{"a": "1", "b": "2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := &routeErrors{st: &status.Object{}, where: "R"}
			var rt Route
			routeAuth(&rt, &tc.route, tc.scope, errs)
			if rt.AuthDisabled != tc.wantDisabled || !reflect.DeepEqual(rt.AuthContext, tc.wantContext) || errs.invalid != tc.wantErr {
				t.Errorf("disabled %v, context %v, errors %+v; want %v, %v, error %v", rt.AuthDisabled, rt.AuthContext, errs.st.Errors, tc.wantDisabled, tc.wantContext, tc.wantErr)
			}
			refused := slices.ContainsFunc(errs.st.Warnings, func(p status.Problem) bool { return p.Reason == status.ReasonOptOutForbidden })
			if refused != tc.wantRefused {
				t.Errorf("refused (warning %s) %v, want %v: %+v", status.ReasonOptOutForbidden, refused, tc.wantRefused, errs.st.Warnings)
			}
		})
	}
	if global.policy.Context["a"] != "1" || len(global.policy.Context) != 1 {
		t.Errorf("routeAuth changed the enclosing context: %v", global.policy.Context)
	}
}

// TestAuthorizationWithoutServer: an authorization block without an
// extensionRef may opt out of or refine the global authorization; the
// settings of a server of the host's own are errors whatever else it says,
// and an opt-out with no global authorization is a warning, not an error.
func TestAuthorizationWithoutServer(t *testing.T) {
	off := &contourv1.AuthorizationPolicy{Disabled: true}
	ctx := &contourv1.AuthorizationPolicy{Context: map[string]string{"k": "v"}}
	for _, tc := range []struct {
		name         string
		a            contourv1.AuthorizationServer
		global       bool
		globalHTTP   bool
		wantErrors   []string // parts of each error's message, in order
		wantWarnings []string
	}{
		{name: "opt-out under global", a: contourv1.AuthorizationServer{AuthPolicy: off}, global: true},
		{name: "opt-out without global", a: contourv1.AuthorizationServer{AuthPolicy: off}, wantWarnings: []string{"AuthPolicy.Disabled: no global authorization is configured"}},
		{name: "globalExtAuthDisabled under global", a: contourv1.AuthorizationServer{GlobalExternalAuthorizationDisabled: true}, global: true},
		{name: "globalExtAuthDisabled without global", a: contourv1.AuthorizationServer{GlobalExternalAuthorizationDisabled: true}, wantWarnings: []string{"GlobalExtAuthDisabled: no global authorization is configured"}},
		{name: "refinement under global", a: contourv1.AuthorizationServer{AuthPolicy: ctx}, global: true},
		{name: "refinement without global", a: contourv1.AuthorizationServer{AuthPolicy: ctx}, wantErrors: []string{"AuthPolicy refines the global authorization, but none is configured"}},
		{name: "empty block", a: contourv1.AuthorizationServer{}, global: true, wantErrors: []string{"ExtensionRef.Name must be specified"}},
		{name: "bad timeout alone", a: contourv1.AuthorizationServer{ResponseTimeout: "bogus"}, global: true,
			wantErrors: []string{"ResponseTimeout is invalid", "responseTimeout configure the host's own authorization server, which needs extensionRef"}},
		{name: "bad timeout with failOpen and a policy", a: contourv1.AuthorizationServer{ResponseTimeout: "bogus", FailOpen: true, AuthPolicy: ctx}, global: true,
			wantErrors: []string{"ResponseTimeout is invalid", "responseTimeout, failOpen configure the host's own authorization server"}},
		{name: "a good timeout is no better without a server", a: contourv1.AuthorizationServer{ResponseTimeout: "1s", AuthPolicy: ctx}, global: true,
			wantErrors: []string{"responseTimeout configure the host's own authorization server"}},
		{name: "body settings with an opt-out", a: contourv1.AuthorizationServer{WithRequestBody: &contourv1.AuthorizationServerBufferSettings{}, GlobalExternalAuthorizationDisabled: true}, global: true,
			wantErrors: []string{"withRequestBody configure the host's own authorization server"}},
		{name: "serviceType without a server", a: contourv1.AuthorizationServer{ServiceType: contourv1.AuthorizationHTTPService, AuthPolicy: off}, global: true,
			wantErrors: []string{"serviceType and httpSettings configure the host's own authorization server"}},
		{name: "context refining a global HTTP server", a: contourv1.AuthorizationServer{AuthPolicy: ctx}, global: true, globalHTTP: true,
			wantErrors: []string{"AuthPolicy.Context: the global authorization server is an HTTP one"}},
		{name: "opt-out of a global HTTP server", a: contourv1.AuthorizationServer{AuthPolicy: off}, global: true, globalHTTP: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &status.Object{}
			withoutServer(&tc.a, tc.global, tc.globalHTTP, st)
			check := func(kind string, got []status.Problem, want []string) {
				if len(got) != len(want) {
					t.Fatalf("%s: %v, want %d containing %q", kind, got, len(want), want)
				}
				for i, w := range want {
					if !strings.Contains(got[i].Message, w) {
						t.Errorf("%s[%d] = %q, want it to contain %q", kind, i, got[i].Message, w)
					}
				}
			}
			check("errors", st.Errors, tc.wantErrors)
			check("warnings", st.Warnings, tc.wantWarnings)
		})
	}
}
