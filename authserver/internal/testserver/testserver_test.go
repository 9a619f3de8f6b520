package testserver_test

import (
	"context"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"

	"github.com/portcullis/portcullis/authserver/internal/check"
	"github.com/portcullis/portcullis/authserver/internal/testserver"
)

func request(context map[string]string, headers map[string]string) *authv3.CheckRequest {
	return &authv3.CheckRequest{Attributes: &authv3.AttributeContext{
		ContextExtensions: context,
		Request: &authv3.AttributeContext_Request{Http: &authv3.AttributeContext_HttpRequest{
			Method: "GET", Host: "app.example", Path: "/", Headers: headers,
		}},
	}}
}

func headerMap(opts []*corev3.HeaderValueOption) map[string]string {
	m := map[string]string{}
	for _, o := range opts {
		m[o.GetHeader().GetKey()] = o.GetHeader().GetValue()
	}
	return m
}

func TestCheck(t *testing.T) {
	type want struct {
		result   string
		status   int
		headers  map[string]string // upstream headers on allow, response headers otherwise
		remove   []string
		bodyHas  string
		location string
	}
	allowOnly := map[string]string{"Auth-Handler": "testserver"}
	for _, tc := range []struct {
		name    string
		context map[string]string
		headers map[string]string
		want    want
	}{
		{name: "allows with no context", want: want{result: check.ResultAllowed, headers: allowOnly}},
		{
			name:    "one header per context entry",
			context: map[string]string{"key1": "value1", "team_name": "blue", "x.y/z": "dots"},
			want: want{result: check.ResultAllowed, headers: map[string]string{
				"Auth-Handler": "testserver", "Auth-Context-Key1": "value1",
				"Auth-Context-Team-Name": "blue", "Auth-Context-X-Y-Z": "dots",
			}},
		},
		{
			name:    "keys that canonicalise alike are joined in key order",
			context: map[string]string{"a_b": "2", "a.b": "1"},
			want:    want{result: check.ResultAllowed, headers: map[string]string{"Auth-Handler": "testserver", "Auth-Context-A-B": "1, 2"}},
		},
		{
			name:    "client-supplied copies are removed or overwritten",
			context: map[string]string{"key1": "value1"},
			headers: map[string]string{
				"auth-handler": "forged", "auth_handler": "forged",
				"auth-context-key1": "forged", "auth_context_key1": "forged", "auth_context-key1": "forged",
				"auth-context-key2": "not ours, stays",
			},
			want: want{
				result:  check.ResultAllowed,
				headers: map[string]string{"Auth-Handler": "testserver", "Auth-Context-Key1": "value1"},
				remove:  []string{"auth_context-key1", "auth_context_key1", "auth_handler"},
			},
		},
		{
			name:    "client headers cannot ask for a denial",
			headers: map[string]string{"testserver.portcullis.dev/deny": "403", "x-testserver-deny": "403"},
			want:    want{result: check.ResultAllowed, headers: allowOnly},
		},
		{
			name:    "deny with the operator's status",
			context: map[string]string{testserver.DenyKey: "403", "key1": "v"},
			want:    want{result: check.ResultDenied, status: 403, bodyHas: "403 Forbidden"},
		},
		{
			name:    "deny 401",
			context: map[string]string{testserver.DenyKey: "401"},
			want:    want{result: check.ResultDenied, status: 401, bodyHas: "401 Unauthorized"},
		},
		{
			name:    "deny 503 counts as error",
			context: map[string]string{testserver.DenyKey: "503"},
			want:    want{result: check.ResultError, status: 503, bodyHas: "503 Service Unavailable"},
		},
		{
			name:    "redirect to an absolute URL",
			context: map[string]string{testserver.RedirectKey: "https://login.example/"},
			want:    want{result: check.ResultRedirect, status: 302, location: "https://login.example/"},
		},
		{
			name:    "redirect to a path",
			context: map[string]string{testserver.RedirectKey: "/login?rd=%2Fapp"},
			want:    want{result: check.ResultRedirect, status: 302, location: "/login?rd=%2Fapp"},
		},
		{
			name:    "deny wins over redirect",
			context: map[string]string{testserver.DenyKey: "403", testserver.RedirectKey: "/login"},
			want:    want{result: check.ResultDenied, status: 403},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := testserver.New(slog.New(slog.NewTextHandler(io.Discard, nil)))
			resp, err := srv.Check(context.Background(), request(tc.context, tc.headers))
			if err != nil {
				t.Fatalf("Check error: %v", err)
			}
			result, status := check.Classify(resp)
			if result != tc.want.result || (tc.want.status != 0 && status != tc.want.status) {
				t.Fatalf("Check = %s %d, want %s %d (%v)", result, status, tc.want.result, tc.want.status, resp)
			}
			if ok := resp.GetOkResponse(); ok != nil {
				if got := headerMap(ok.GetHeaders()); !maps.Equal(got, tc.want.headers) {
					t.Errorf("upstream headers = %v, want %v", got, tc.want.headers)
				}
				if !slices.Equal(ok.GetHeadersToRemove(), tc.want.remove) {
					t.Errorf("headers_to_remove = %q, want %q", ok.GetHeadersToRemove(), tc.want.remove)
				}
				return
			}
			d := resp.GetDeniedResponse()
			if !strings.Contains(d.GetBody(), tc.want.bodyHas) {
				t.Errorf("body = %q, want it to contain %q", d.GetBody(), tc.want.bodyHas)
			}
			if got := headerMap(d.GetHeaders())["Location"]; got != tc.want.location {
				t.Errorf("Location = %q, want %q", got, tc.want.location)
			}
		})
	}
}

// Bad operator values fail closed: a 500 denial, never an allow and never a
// gRPC error (which a fail-open ExtensionService would turn into an allow).
func TestMisconfigurationFailsClosed(t *testing.T) {
	for name, ctx := range map[string]map[string]string{
		"deny not a number":          {testserver.DenyKey: "forbidden"},
		"deny not 4xx or 5xx":        {testserver.DenyKey: "302"},
		"deny status Envoy lacks":    {testserver.DenyKey: "499"},
		"deny out of range":          {testserver.DenyKey: "4030"},
		"redirect protocol-relative": {testserver.RedirectKey: "//evil.example/"},
		"redirect backslash":         {testserver.RedirectKey: "/\\evil.example/"},
		"redirect other scheme":      {testserver.RedirectKey: "javascript:alert(1)"},
		"redirect userinfo":          {testserver.RedirectKey: "https://login.example@evil.example/"},
		"redirect relative":          {testserver.RedirectKey: "login"},
		"redirect header injection":  {testserver.RedirectKey: "https://login.example/\r\nSet-Cookie: a=b"},
		"redirect empty":             {testserver.RedirectKey: ""},
		"unknown key (typo)":         {testserver.KeyPrefix + "denny": "403"},
		"CRLF in a context value":    {"key1": "v\r\nX-Injected: 1"},
		"LF in a context value":      {"key1": "v\nX-Injected: 1"},
		"NUL in a context value":     {"key1": "v\x00"},
	} {
		t.Run(name, func(t *testing.T) {
			srv := testserver.New(slog.New(slog.NewTextHandler(io.Discard, nil)))
			resp, err := srv.Check(context.Background(), request(ctx, nil))
			if err != nil {
				t.Fatalf("Check returned a gRPC error: %v", err)
			}
			if result, status := check.Classify(resp); result != check.ResultError || status != 500 {
				t.Fatalf("Check = %s %d, want error 500", result, status)
			}
		})
	}
}
