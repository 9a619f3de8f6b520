package check_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"google.golang.org/grpc/codes"

	"github.com/portcullis/portcullis/authserver/internal/check"
)

// request builds a CheckRequest as Envoy sends it: lower-cased names in the
// headers map; raw names may also arrive in header_map.
func request(headers map[string]string, raw ...string) *authv3.CheckRequest {
	h := &authv3.AttributeContext_HttpRequest{Method: "GET", Host: "app.example", Path: "/", Headers: headers}
	if len(raw) > 0 {
		h.HeaderMap = &corev3.HeaderMap{}
		for _, name := range raw {
			h.HeaderMap.Headers = append(h.HeaderMap.Headers, &corev3.HeaderValue{Key: name, RawValue: []byte("x")})
		}
	}
	return &authv3.CheckRequest{Attributes: &authv3.AttributeContext{Request: &authv3.AttributeContext_Request{Http: h}}}
}

func TestAllowRemovesClientCopies(t *testing.T) {
	ours := []check.Header{{"Auth-Handler", "testserver"}, {"Auth-Context-Key1", "v1"}}
	for _, tc := range []struct {
		name       string
		req        *authv3.CheckRequest
		wantRemove []string
	}{
		{"no client copies", request(map[string]string{"accept": "*/*"}), nil},
		{"exact copies are overwritten, not removed",
			request(map[string]string{"auth-handler": "forged", "auth-context-key1": "forged"}), nil},
		{"underscore variants are removed",
			request(map[string]string{"auth_handler": "forged", "auth_context_key1": "forged", "auth-context_key1": "forged"}),
			[]string{"auth-context_key1", "auth_context_key1", "auth_handler"}},
		{"raw header map names, any case",
			request(nil, "Auth_Context_Key1", "AUTH_HANDLER", "Auth-Handler"),
			[]string{"AUTH_HANDLER", "Auth_Context_Key1"}},
		{"a name in both the map and the raw header map is removed once",
			request(map[string]string{"auth_handler": "forged"}, "auth_handler"),
			[]string{"auth_handler"}},
		{"unrelated look-alikes stay",
			request(map[string]string{"auth-handler-x": "a", "x-auth-handler": "b", "authhandler": "c"}), nil},
		{"no attributes at all", &authv3.CheckRequest{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := check.Allow(tc.req, ours)
			if err != nil {
				t.Fatal(err)
			}
			if resp.GetStatus().GetCode() != int32(codes.OK) {
				t.Fatalf("status = %v", resp.GetStatus())
			}
			ok := resp.GetOkResponse()
			if !slices.Equal(ok.GetHeadersToRemove(), tc.wantRemove) {
				t.Errorf("headers_to_remove = %q, want %q", ok.GetHeadersToRemove(), tc.wantRemove)
			}
			if len(ok.GetHeaders()) != len(ours) {
				t.Fatalf("headers = %v", ok.GetHeaders())
			}
			for i, h := range ok.GetHeaders() {
				if h.GetHeader().GetKey() != ours[i].Name || h.GetHeader().GetValue() != ours[i].Value ||
					h.GetAppendAction() != corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD {
					t.Errorf("header %d = %v, want %v overwriting", i, h, ours[i])
				}
			}
		})
	}
}

func TestAllowRejectsUnsafeHeaders(t *testing.T) {
	for _, h := range []check.Header{
		{"Auth-User", "alice\r\nSet-Cookie: session=forged"},
		{"Auth-User", "alice\nX: y"},
		{"Auth-User", "nul\x00byte"},
		{"Auth-User", "del\x7f"},
		{"Auth-User", strings.Repeat("a", 16385)},
		{"Auth User", "space in name"},
		{"Auth:User", "colon in name"},
		{"", "empty name"},
	} {
		if _, err := check.Allow(request(nil), []check.Header{h}); err == nil {
			t.Errorf("Allow accepted %q: %q", h.Name, h.Value)
		}
	}
	if _, err := check.Allow(request(nil), []check.Header{{"Auth-User", "tab\tand ünïcode are fine"}}); err != nil {
		t.Errorf("Allow rejected a valid value: %v", err)
	}
}

func TestDeny(t *testing.T) {
	resp, err := check.Deny(http.StatusForbidden, "nope\n")
	if err != nil {
		t.Fatal(err)
	}
	d := resp.GetDeniedResponse()
	if resp.GetStatus().GetCode() == int32(codes.OK) || d.GetStatus().GetCode() != 403 || d.GetBody() != "nope\n" {
		t.Fatalf("Deny = %v", resp)
	}
	if got := headerValue(d.GetHeaders(), "Content-Type"); !strings.HasPrefix(got, "text/plain") {
		t.Errorf("Content-Type = %q", got)
	}
	for _, status := range []int{0, 200, 302, 399, 499, 600, 999} {
		if _, err := check.Deny(status, ""); err == nil {
			t.Errorf("Deny(%d) accepted", status)
		}
	}
}

func TestRedirect(t *testing.T) {
	resp, err := check.Redirect("https://login.example/?rd=%2F")
	if err != nil {
		t.Fatal(err)
	}
	d := resp.GetDeniedResponse()
	if d.GetStatus().GetCode() != 302 || headerValue(d.GetHeaders(), "Location") != "https://login.example/?rd=%2F" {
		t.Fatalf("Redirect = %v", resp)
	}
	for _, loc := range []string{"", "https://x/\r\nSet-Cookie: a=b"} {
		if _, err := check.Redirect(loc); err == nil {
			t.Errorf("Redirect(%q) accepted", loc)
		}
	}
}

func TestRespond(t *testing.T) {
	resp, err := check.Respond(http.StatusOK, "<p>hi</p>", check.Header{Name: "Content-Type", Value: "text/html; charset=utf-8"})
	if err != nil {
		t.Fatal(err)
	}
	d := resp.GetDeniedResponse()
	// Not OK: an OK status would send the request upstream instead.
	if resp.GetStatus().GetCode() == int32(codes.OK) || d.GetStatus().GetCode() != 200 || d.GetBody() != "<p>hi</p>" ||
		headerValue(d.GetHeaders(), "Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("Respond = %v", resp)
	}
	if _, err := check.Respond(299, ""); err == nil {
		t.Error("a status unknown to Envoy accepted")
	}
	if _, err := check.Respond(http.StatusOK, "", check.Header{Name: "X", Value: "a\nb"}); err == nil {
		t.Error("a header with a newline accepted")
	}
}

func TestClassify(t *testing.T) {
	deny := func(status int) *authv3.CheckResponse {
		r, err := check.Deny(status, "")
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	allow, _ := check.Allow(request(nil), nil)
	redirect, _ := check.Redirect("/login")
	for _, tc := range []struct {
		resp       *authv3.CheckResponse
		wantResult string
		wantStatus int
	}{
		{allow, check.ResultAllowed, 200},
		{&authv3.CheckResponse{}, check.ResultAllowed, 200}, // Envoy reads a missing status as OK
		{deny(401), check.ResultDenied, 401},
		{deny(403), check.ResultDenied, 403},
		{redirect, check.ResultRedirect, 302},
		{check.InternalError(), check.ResultError, 500},
	} {
		result, status := check.Classify(tc.resp)
		if result != tc.wantResult || status != tc.wantStatus {
			t.Errorf("Classify(%v) = %s %d, want %s %d", tc.resp, result, status, tc.wantResult, tc.wantStatus)
		}
	}
}

func headerValue(headers []*corev3.HeaderValueOption, name string) string {
	for _, h := range headers {
		if strings.EqualFold(h.GetHeader().GetKey(), name) {
			return h.GetHeader().GetValue()
		}
	}
	return ""
}

func TestUnauthorized(t *testing.T) {
	resp, err := check.Unauthorized(`Basic realm="staff", charset="UTF-8"`)
	if err != nil {
		t.Fatal(err)
	}
	d := resp.GetDeniedResponse()
	if resp.GetStatus().GetCode() != int32(codes.Unauthenticated) || d.GetStatus().GetCode() != 401 {
		t.Fatalf("Unauthorized = %v", resp)
	}
	if got := headerValue(d.GetHeaders(), "WWW-Authenticate"); got != `Basic realm="staff", charset="UTF-8"` {
		t.Errorf("WWW-Authenticate = %q", got)
	}
	if got := headerValue(d.GetHeaders(), "Cache-Control"); got != "no-store" {
		t.Errorf("Cache-Control = %q", got)
	}
	if _, err := check.Unauthorized("Basic realm=\"x\"\r\nSet-Cookie: a=b"); err == nil {
		t.Error("Unauthorized accepted a challenge with CR/LF")
	}
	if _, err := check.DenyWithHeaders(429, "", check.Header{"Bad Name", "x"}); err == nil {
		t.Error("DenyWithHeaders accepted an invalid header name")
	}
}

// TestAllowWithContextRemovesEveryClientContextHeader: upstreams trust
// Auth-Context-* as the route's context, so a client must not add keys the
// route does not have.
func TestAllowWithContextRemovesEveryClientContextHeader(t *testing.T) {
	req := request(map[string]string{"auth-context-role": "admin", "auth_context_tier": "gold", "auth-context-key1": "forged", "auth-handler-x": "a"}, "AUTH-CONTEXT-TEAM")
	resp, err := check.AllowWithContext(req, []check.Header{{"Auth-Handler", "htpasswd"}, {"Auth-Context-Key1", "v1"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"AUTH-CONTEXT-TEAM", "auth-context-role", "auth_context_tier"}
	if got := resp.GetOkResponse().GetHeadersToRemove(); !slices.Equal(got, want) {
		t.Errorf("headers_to_remove = %q, want %q", got, want)
	}
	// Allow (testserver's) keeps context headers it does not set.
	resp, err = check.Allow(req, []check.Header{{"Auth-Handler", "testserver"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.GetOkResponse().GetHeadersToRemove(); len(got) != 0 {
		t.Errorf("Allow removed %q", got)
	}
}

// TestAllowRemovingRemovesClientCopiesOfUnsetHeaders: a header the backend
// owns but does not set must not reach the upstream in any spelling.
func TestAllowRemovingRemovesClientCopiesOfUnsetHeaders(t *testing.T) {
	req := request(map[string]string{"auth-tier": "gold", "auth_tier": "gold", "auth-handler": "forged", "accept": "*/*"}, "AUTH-TIER")
	resp, err := check.AllowRemoving(req, []check.Header{{"Auth-Handler", "oidc"}}, []string{"Auth-Tier"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"AUTH-TIER", "auth-tier", "auth_tier"}
	if got := resp.GetOkResponse().GetHeadersToRemove(); !slices.Equal(got, want) {
		t.Errorf("headers_to_remove = %q, want %q", got, want)
	}
}
