package apicheck

import (
	"strings"
	"testing"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
)

// TestCheckAuthServiceType: what an HTTP authorization server accepts and
// what only a gRPC one does.
func TestCheckAuthServiceType(t *testing.T) {
	type h = contourv1.HTTPAuthorizationServerAllowedHeaders
	http := contourv1.AuthorizationHTTPService
	for _, tc := range []struct {
		name     string
		typ      contourv1.AuthorizationServiceType
		settings *contourv1.HTTPAuthorizationServerSettings
		body     *contourv1.AuthorizationServerBufferSettings
		policy   *contourv1.AuthorizationPolicy
		want     []string // parts of each message, in order; none: valid
	}{
		{name: "gRPC by default"},
		{name: "gRPC with a context", typ: contourv1.AuthorizationGRPCService, policy: &contourv1.AuthorizationPolicy{Context: map[string]string{"k": "v"}}, body: &contourv1.AuthorizationServerBufferSettings{PackAsBytes: true}},
		{name: "HTTP without settings", typ: http},
		{name: "HTTP with every matcher", typ: http, settings: &contourv1.HTTPAuthorizationServerSettings{PathPrefix: "/auth/v1",
			AllowedAuthorizationHeaders: []h{{Exact: "x-token"}, {Prefix: "x-app-", IgnoreCase: true}},
			AllowedUpstreamHeaders:      []h{{Suffix: "-user"}, {Contains: "tenant"}}}},
		{name: "HTTP with a disabled policy", typ: http, policy: &contourv1.AuthorizationPolicy{Disabled: true}, body: &contourv1.AuthorizationServerBufferSettings{MaxRequestBytes: 10}},
		{name: "httpSettings with gRPC", settings: &contourv1.HTTPAuthorizationServerSettings{}, want: []string{"httpSettings: is only valid with serviceType: http"}},
		{name: "unknown type", typ: "soap", want: []string{`serviceType: "soap" is not supported`}},
		{name: "gRPC-only settings over HTTP", typ: http, body: &contourv1.AuthorizationServerBufferSettings{PackAsBytes: true}, policy: &contourv1.AuthorizationPolicy{Context: map[string]string{"k": "v"}},
			want: []string{"withRequestBody.packAsBytes: exists only in the gRPC protocol", "authPolicy.context: context extensions exist only in the gRPC protocol"}},
		{name: "bad settings", typ: http, settings: &contourv1.HTTPAuthorizationServerSettings{PathPrefix: "auth",
			AllowedAuthorizationHeaders: []h{{}, {Exact: "x-token", Prefix: "x-"}},
			AllowedUpstreamHeaders:      []h{{Exact: "x-auth-user"}, {Contains: "bad name"}}},
			want: []string{`httpSettings.pathPrefix: "auth" must start with /`,
				"httpSettings.allowedAuthorizationHeaders[0]: set exactly one of exact, prefix, suffix and contains (0 set)",
				"httpSettings.allowedAuthorizationHeaders[1]: set exactly one of exact, prefix, suffix and contains (2 set)",
				`httpSettings.allowedUpstreamHeaders[1]: contains "bad name" is not part of a header name`}},
		{name: "a query in the prefix", typ: http, settings: &contourv1.HTTPAuthorizationServerSettings{PathPrefix: "/auth?x=1"}, want: []string{"httpSettings.pathPrefix"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := CheckAuthServiceType("serviceType", tc.typ, tc.settings, tc.body, tc.policy)
			if len(got) != len(tc.want) {
				t.Fatalf("got %q, want %d messages containing %q", got, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("message %d = %q, want it to contain %q", i, got[i], w)
				}
			}
		})
	}
}
