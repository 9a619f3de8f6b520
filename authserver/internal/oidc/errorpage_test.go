package oidc

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
)

// TestErrorPages: a failed sign-in (or sign-out) answers a small HTML
// page with the failure's status, what happened and a link to try again
// (the original URL when known, else "/"), everything escaped. It used to
// be one line of plain text with no way back. Clients that ask for JSON,
// and scripts, still get the line.
func TestErrorPages(t *testing.T) {
	op := newStandInOP(t, map[string]any{"sub": "u", "email": "u@example.test"})
	srv := newServerFor(t, op, &bytes.Buffer{}, nil)
	html := map[string]string{"accept": "text/html,application/xhtml+xml,*/*;q=0.8"}
	with := func(h map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range h {
			out[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	xss := `https://evil.example/"><script>alert(1)</script>`
	unverified := func(t *testing.T) string {
		sess := aliceSession(time.Now())
		sess.Claims["email_verified"] = false
		return sessionCookie(t, srv, sess)
	}
	for _, tc := range []struct {
		name     string
		req      func(t *testing.T) *authv3.CheckRequest
		status   int
		plain    bool   // one line of text, not a page
		link     string // the page's link, as it appears in href
		linkText string
	}{
		{"sign-in path, refused rd", func(*testing.T) *authv3.CheckRequest {
			return checkReq("GET", "/oauth2/sign_in?rd="+url.QueryEscape(xss), html, nil)
		}, 400, false, "/", "Sign in again"},
		{"sign-in path, refused rd, JSON client", func(*testing.T) *authv3.CheckRequest {
			return checkReq("GET", "/oauth2/sign_in?rd="+url.QueryEscape(xss), map[string]string{"accept": "application/json"}, nil)
		}, 400, true, "", ""},
		{"callback without a sign-in", func(*testing.T) *authv3.CheckRequest {
			return checkReq("GET", "/oauth2/callback?code=c&state=unknown", html, nil)
		}, 400, false, "/", "Sign in again"},
		{"callback, the ID token's nonce is not ours: back to the original URL", func(t *testing.T) *authv3.CheckRequest {
			fs, _ := json.Marshal(flowState{State: "st-nonce", Nonce: "another", Verifier: "v", Return: "/orig?x=1&y=2", Expiry: time.Now().Add(time.Minute).Unix()})
			return checkReq("GET", "/oauth2/callback?code=c&state=st-nonce", with(html, "cookie", flowCookieFor(srv, "st-nonce", fs)), nil)
		}, 401, false, "/orig?x=1&amp;y=2", "Sign in again"},
		{"sign-out from another site", func(*testing.T) *authv3.CheckRequest {
			return checkReq("POST", "/oauth2/sign_out", with(html, "origin", "https://evil.example"), nil)
		}, 403, false, "/oauth2/sign_out", "Sign out from this site&#39;s page"},
		{"signed in with an unverified address", func(t *testing.T) *authv3.CheckRequest {
			return checkReq("GET", "/page?a=1", with(html, "cookie", unverified(t)), nil)
		}, 403, false, "/page?a=1", "Sign in again"},
		{"signed in with an unverified address, script", func(t *testing.T) *authv3.CheckRequest {
			return checkReq("GET", "/page", map[string]string{"cookie": unverified(t), "x-requested-with": "XMLHttpRequest"}, nil)
		}, 403, true, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := srv.Check(context.Background(), tc.req(t))
			if err != nil {
				t.Fatal(err)
			}
			d := resp.GetDeniedResponse()
			if int(d.GetStatus().GetCode()) != tc.status {
				t.Fatalf("status %d, want %d: %s", d.GetStatus().GetCode(), tc.status, d.GetBody())
			}
			body, ct := d.GetBody(), deniedHeader(resp, "Content-Type")
			if strings.Contains(strings.ToLower(body), "<script") {
				t.Errorf("the request's markup is in the page unescaped: %s", body)
			}
			if tc.plain {
				if len(ct) != 1 || !strings.HasPrefix(ct[0], "text/plain") || strings.Count(body, "\n") != 1 || !strings.HasPrefix(body, strconv.Itoa(tc.status)+" ") {
					t.Errorf("Content-Type %q body %q, want one line of plain text", ct, body)
				}
				return
			}
			if len(ct) != 1 || ct[0] != "text/html; charset=utf-8" {
				t.Fatalf("Content-Type %q, want an HTML page: %s", ct, body)
			}
			if want := `<a href="` + tc.link + `">` + tc.linkText + `</a>`; !strings.Contains(body, want) {
				t.Errorf("page lacks %s:\n%s", want, body)
			}
			if !strings.Contains(body, "<h1>") || !strings.Contains(body, http.StatusText(tc.status)) {
				t.Errorf("page lacks a heading or the status:\n%s", body)
			}
			for name, want := range map[string]string{"Cache-Control": "no-store", "X-Frame-Options": "DENY", "Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'"} {
				if got := deniedHeader(resp, name); len(got) != 1 || got[0] != want {
					t.Errorf("%s = %q, want %q", name, got, want)
				}
			}
		})
	}
}
