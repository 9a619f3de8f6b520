package oidc

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"golang.org/x/oauth2"
)

// newTestServer builds the backend against an issuer nobody listens on:
// these tests cover what Check decides without the provider (the e2e test
// covers the rest against a real one).
func newTestServer(t testing.TB, keys ...[]byte) *Server {
	t.Helper()
	if len(keys) == 0 {
		keys = [][]byte{key(1)}
	}
	c := Config{Issuer: "http://127.0.0.1:1", ClientID: "portcullis",
		Headers: []HeaderMapping{{"Auth-Subject", "sub"}, {"Auth-Username", "email"}, {"Auth-Groups", "groups"}, {"Auth-Tier", "tier"}}}
	c.setDefaults()
	srv, err := New(&Settings{Config: c, Keys: keys}, slog.New(slog.NewTextHandler(io.Discard, nil)), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

func sessionCookie(t testing.TB, srv *Server, sess session) string {
	t.Helper()
	b, err := json.Marshal(sess)
	if err != nil {
		t.Fatal(err)
	}
	return srv.s.Cookie.Name + "=" + srv.sealer.seal(srv.s.Cookie.Name, b)
}

func aliceSession(now time.Time) session {
	return session{ID: "id-1", IDToken: "x.y.z", Created: now.Unix(), Expiry: now.Add(time.Minute).Unix(),
		Claims: map[string]any{"sub": "alice", "email": "alice@example.test", "groups": []any{"users", "admins"}}}
}

func checkReq(method, path string, headers, ctx map[string]string) *authv3.CheckRequest {
	return &authv3.CheckRequest{Attributes: &authv3.AttributeContext{
		ContextExtensions: ctx,
		Request: &authv3.AttributeContext_Request{Http: &authv3.AttributeContext_HttpRequest{
			Method: method, Scheme: "https", Host: "app.example.com", Path: path, Headers: headers,
		}},
	}}
}

func deniedHeader(resp *authv3.CheckResponse, name string) []string {
	var vs []string
	for _, h := range resp.GetDeniedResponse().GetHeaders() {
		if strings.EqualFold(h.GetHeader().GetKey(), name) {
			vs = append(vs, h.GetHeader().GetValue())
		}
	}
	return vs
}

func TestCheckWithSession(t *testing.T) {
	now := time.Now()
	srv := newTestServer(t)
	cookie := sessionCookie(t, srv, aliceSession(now))
	for _, tc := range []struct {
		name    string
		req     *authv3.CheckRequest
		status  int // 200 for allowed
		headers map[string]string
		remove  []string
		// upstreamCookie is the Cookie header the upstream gets ("" for none).
		upstreamCookie string
	}{
		{"valid session: claims to headers, client copies removed",
			checkReq("GET", "/x", map[string]string{"cookie": "other=1; " + cookie, "auth_username": "mallory", "auth-tier": "gold", "auth_tier": "gold"}, nil),
			200, map[string]string{"Auth-Subject": "alice", "Auth-Username": "alice@example.test", "Auth-Groups": "users,admins"},
			[]string{"auth-tier", "auth_tier", "auth_username"}, "other=1"},
		{"state cookies of sign-ins in progress do not reach the upstream",
			checkReq("GET", "/x", map[string]string{"cookie": srv.flowCookie("st") + "=v; other=1; " + srv.legacyState + "=w; " + cookie}, nil),
			200, nil, nil, "other=1"},
		{"required group present",
			checkReq("GET", "/x", map[string]string{"cookie": cookie}, map[string]string{KeyGroups: "auditors, admins"}), 200, nil, nil, ""},
		{"required group missing: 403",
			checkReq("GET", "/x", map[string]string{"cookie": cookie}, map[string]string{KeyGroups: "auditors"}), 403, nil, nil, ""},
		{"required claim value",
			checkReq("GET", "/x", map[string]string{"cookie": cookie}, map[string]string{KeyClaimPrefix + "email": "alice@example.test"}), 200, nil, nil, ""},
		{"required claim value differs: 403",
			checkReq("GET", "/x", map[string]string{"cookie": cookie}, map[string]string{KeyClaimPrefix + "email": "bob@example.test"}), 403, nil, nil, ""},
		{"POST with a session",
			checkReq("POST", "/x", map[string]string{"cookie": cookie}, nil), 200, nil, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := srv.Check(context.Background(), tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if tc.status == 200 {
				ok := resp.GetOkResponse()
				if ok == nil {
					t.Fatalf("denied: %v", resp.GetDeniedResponse())
				}
				got := map[string]string{}
				for _, h := range ok.GetHeaders() {
					got[h.GetHeader().GetKey()] = h.GetHeader().GetValue()
				}
				for k, v := range tc.headers {
					if got[k] != v {
						t.Errorf("%s = %q, want %q", k, got[k], v)
					}
				}
				if _, set := got["Auth-Tier"]; set {
					t.Error("Auth-Tier set without a tier claim")
				}
				rm := slices.Clone(ok.GetHeadersToRemove())
				slices.Sort(rm)
				if tc.remove != nil && !slices.Equal(slices.DeleteFunc(slices.Clone(rm), func(n string) bool { return n == "cookie" }), tc.remove) {
					t.Errorf("headers_to_remove = %v, want %v", rm, tc.remove)
				}
				if got["Cookie"] != tc.upstreamCookie || (tc.upstreamCookie == "") != slices.Contains(rm, "cookie") {
					t.Errorf("upstream Cookie = %q (removed: %v), want %q: our cookies must not reach the upstream", got["Cookie"], rm, tc.upstreamCookie)
				}
				if len(ok.GetResponseHeadersToAdd()) != 0 {
					t.Errorf("cookies set on an unchanged session: %v", ok.GetResponseHeadersToAdd())
				}
				return
			}
			if got := resp.GetDeniedResponse().GetStatus().GetCode(); int(got) != tc.status {
				t.Errorf("status %d, want %d", got, tc.status)
			}
		})
	}
}

func TestCheckAPIClientsGet401(t *testing.T) {
	now := time.Now()
	srv := newTestServer(t)
	expired := aliceSession(now)
	expired.Expiry = now.Add(-time.Second).Unix()
	tooOld := aliceSession(now)
	tooOld.Created = now.Add(-13 * time.Hour).Unix()
	for _, tc := range []struct {
		name string
		req  *authv3.CheckRequest
	}{
		{"Accept: application/json", checkReq("GET", "/x", map[string]string{"accept": "application/json"}, nil)},
		{"XHR", checkReq("GET", "/x", map[string]string{"x-requested-with": "XMLHttpRequest"}, nil)},
		{"POST", checkReq("POST", "/x", nil, nil)},
		{"API route", checkReq("GET", "/x", map[string]string{"accept": "text/html"}, map[string]string{KeyAPI: "true"})},
		{"expired session without refresh token", checkReq("GET", "/x", map[string]string{"accept": "application/json", "cookie": sessionCookie(t, srv, expired)}, nil)},
		{"session past its lifetime", checkReq("GET", "/x", map[string]string{"accept": "application/json", "cookie": sessionCookie(t, srv, tooOld)}, nil)},
		{"tampered session", checkReq("GET", "/x", map[string]string{"accept": "application/json", "cookie": sessionCookie(t, srv, aliceSession(now)) + "AA"}, nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := srv.Check(context.Background(), tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.GetDeniedResponse().GetStatus().GetCode() != http.StatusUnauthorized {
				t.Fatalf("got %v, want 401", resp)
			}
			if c := deniedHeader(resp, "WWW-Authenticate"); len(c) != 1 || !strings.HasPrefix(c[0], "Bearer ") {
				t.Errorf("WWW-Authenticate = %q", c)
			}
			if loc := deniedHeader(resp, "Location"); len(loc) != 0 {
				t.Errorf("an API client was redirected to %q", loc)
			}
		})
	}
	if got := testutil.ToFloat64(srv.m.failures.WithLabelValues(failSessionInvalid)); got != 1 {
		t.Errorf("session_invalid failures = %v, want 1", got)
	}
}

func TestCheckKeyRotation(t *testing.T) {
	now := time.Now()
	old := newTestServer(t, key(1))
	cookie := sessionCookie(t, old, aliceSession(now))
	req := checkReq("GET", "/x", map[string]string{"cookie": cookie, "accept": "application/json"}, nil)
	for _, tc := range []struct {
		name  string
		keys  [][]byte
		allow bool
	}{
		{"new key first, old key second", [][]byte{key(2), key(1)}, true},
		{"old key retired", [][]byte{key(2)}, false},
	} {
		resp, err := newTestServer(t, tc.keys...).Check(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if (resp.GetOkResponse() != nil) != tc.allow {
			t.Errorf("%s: allowed=%v, want %v", tc.name, resp.GetOkResponse() != nil, tc.allow)
		}
	}
}

func TestCheckFailsClosed(t *testing.T) {
	srv := newTestServer(t)
	for _, tc := range []struct {
		name string
		req  *authv3.CheckRequest
	}{
		{"unknown context key", checkReq("GET", "/x", nil, map[string]string{ContextPrefix + "grups": "admins"})},
		{"bad api value", checkReq("GET", "/x", nil, map[string]string{KeyAPI: "yes"})},
		{"empty groups", checkReq("GET", "/x", nil, map[string]string{KeyGroups: " , "})},
		// The provider is down: no sign-in can start, bearer tokens cannot
		// be checked.
		{"browser sign-in without the provider", checkReq("GET", "/x", map[string]string{"accept": "text/html"}, nil)},
		{"bearer without the provider", checkReq("GET", "/x", map[string]string{"authorization": "Bearer a.b.c"}, nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if resp, err := srv.Check(context.Background(), tc.req); err == nil {
				t.Errorf("answered %v, want an error (the wrapper turns it into a 500)", resp)
			}
		})
	}
}

func TestCheckRefusesUnsafeRedirectsBeforeAnything(t *testing.T) {
	srv := newTestServer(t)
	for _, path := range []string{
		"/oauth2/sign_in?rd=https%3A%2F%2Fevil.example%2F",
		"/oauth2/sign_in?rd=%2F%2Fevil.example",
		"/oauth2/sign_out?rd=https%3A%2F%2Fevil.example%2F",
		"/oauth2/sign_out?rd=%2F%5Cevil.example",
		"/oauth2/sign_in?rd=" + url.QueryEscape("/%252509/evil.example"), // a tab after three decodings
	} {
		resp, err := srv.Check(context.Background(), checkReq("GET", path, nil, nil))
		if err != nil || resp.GetDeniedResponse().GetStatus().GetCode() != http.StatusBadRequest {
			t.Errorf("%s: %v, %v; want 400", path, resp, err)
		}
	}
}

// TestCallbackStates: a callback reads only the state cookie named after
// its own state, clears only that one (another tab's sign-in goes on),
// answers 400 when there is none usable, and starts again (302 to the
// provider, returning to the same page) when its sign-in has expired.
func TestCallbackStates(t *testing.T) {
	srv := newTestServer(t)
	srv.disc.result = &discovered{endpoint: oauth2.Endpoint{AuthURL: "https://idp.example/auth", TokenURL: "https://idp.example/token"}}
	own, other := srv.flowCookie("abc"), srv.flowCookie("other")
	seal := func(name, plain string) string { return name + "=" + srv.sealer.seal(name, []byte(plain)) }
	for _, tc := range []struct {
		name, cookie, reason string
		status               int
		cleared              []string // Set-Cookie values clearing these
	}{
		{"no state cookie", "", failStateMissing, 400, nil},
		{"only another sign-in's state cookie", seal(other, `{"s":"other","r":"/","e":9999999999}`), failStateMissing, 400, nil},
		{"state cookie from another key", own + "=" + newTestServer(t, key(9)).sealer.seal(own, []byte(`{"s":"abc","e":9999999999}`)), failStateMissing, 400, []string{own}},
		{"session cookie moved into the state cookie", own + "=" + srv.sealer.seal(srv.s.Cookie.Name, []byte(`{"s":"abc","e":9999999999}`)), failStateMissing, 400, []string{own}},
		{"another sign-in's state moved under this name", own + "=" + srv.sealer.seal(other, []byte(`{"s":"abc","e":9999999999}`)), failStateMissing, 400, []string{own}},
		{"state cookie too large", own + "=" + strings.Repeat("A", maxFlowCookieBytes+1), failStateMissing, 400, []string{own}},
		{"state mismatch", seal(own, `{"s":"evil","e":9999999999}`), failStateMismatch, 400, []string{own}},
		{"expired: starts again", seal(own, `{"s":"abc","r":"/orig?x=1","e":1}`) + "; " + seal(other, `{"s":"other","r":"/","e":9999999999}`), failStateMissing, 302, []string{own}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := testutil.ToFloat64(srv.m.failures.WithLabelValues(tc.reason))
			resp, err := srv.Check(context.Background(), checkReq("GET", "/oauth2/callback?code=c&state=abc", map[string]string{"cookie": tc.cookie}, nil))
			if err != nil || int(resp.GetDeniedResponse().GetStatus().GetCode()) != tc.status {
				t.Fatalf("%v, %v; want %d", resp, err, tc.status)
			}
			if after := testutil.ToFloat64(srv.m.failures.WithLabelValues(tc.reason)); after != before+1 {
				t.Errorf("%s failures %v -> %v", tc.reason, before, after)
			}
			var cleared, set []string
			for _, c := range setCookies(t, resp) {
				if c.MaxAge < 0 {
					cleared = append(cleared, c.Name)
				} else {
					set = append(set, c.Name)
				}
			}
			if strings.Join(cleared, ",") != strings.Join(tc.cleared, ",") {
				t.Errorf("cleared %v, want %v: a callback clears its own state cookie and nothing else", cleared, tc.cleared)
			}
			if tc.status != 302 {
				return
			}
			loc, _ := url.Parse(deniedHeader(resp, "Location")[0])
			if loc.Host != "idp.example" || len(set) != 1 || set[0] != srv.flowCookie(loc.Query().Get("state")) {
				t.Fatalf("Location %s, cookies set %v: want a new sign-in with its own state cookie", loc, set)
			}
			if fs := readFlowCookie(t, srv, resp); fs.Return != "/orig?x=1" {
				t.Errorf("the new sign-in returns to %q, want /orig?x=1", fs.Return)
			}
		})
	}
}

// readFlowCookie opens the state cookie a response sets.
func readFlowCookie(t *testing.T, srv *Server, resp *authv3.CheckResponse) flowState {
	t.Helper()
	var fs flowState
	for _, c := range setCookies(t, resp) {
		if srv.isFlowCookie(c.Name) && c.MaxAge > 0 {
			plain, err := srv.sealer.open(c.Name, c.Value)
			if err != nil || json.Unmarshal(plain, &fs) != nil {
				t.Fatalf("state cookie %s: %v", c.Name, err)
			}
		}
	}
	return fs
}

func TestRefreshFlightsRunOncePerSession(t *testing.T) {
	r := newRefreshFlights()
	now := time.Now()
	release := make(chan struct{})
	calls := 0
	fn := func() (*session, error) {
		calls++
		<-release
		return &session{ID: "new"}, nil
	}
	results := make(chan *session, 5)
	for range 5 {
		go func() {
			s, _ := r.do("old", now, fn)
			results <- s
		}()
	}
	// Let the callers pile up behind the first, then release it.
	for {
		r.mu.Lock()
		_, running := r.inFlight["old"]
		r.mu.Unlock()
		if running {
			break
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	close(release)
	for range 5 {
		if s := <-results; s == nil || s.ID != "new" {
			t.Fatalf("result %v", s)
		}
	}
	// A request with the old cookie shortly after gets the same result.
	if s, _ := r.do("old", now.Add(time.Second), fn); s.ID != "new" || calls != 1 {
		t.Errorf("calls = %d, want 1", calls)
	}
	// Much later, a new refresh runs.
	if _, err := r.do("old", now.Add(time.Hour), func() (*session, error) { calls++; return &session{}, nil }); err != nil {
		t.Fatal(err)
	}
	if calls != 2 {
		t.Errorf("calls = %d, want 2 after the result expired", calls)
	}

	// A failure is remembered briefly too, then retried.
	fail := func() (*session, error) { calls++; return nil, errors.New("invalid_grant") }
	if _, err := r.do("dead", now, fail); err == nil {
		t.Fatal("no error")
	}
	if _, err := r.do("dead", now.Add(time.Second), fail); err == nil || calls != 3 {
		t.Errorf("calls = %d, want 3: a failure within refreshErrorTTL is not retried", calls)
	}
	if _, err := r.do("dead", now.Add(refreshErrorTTL+time.Second), fail); err == nil {
		t.Error("no error from the retried refresh")
	}
	if calls != 4 {
		t.Errorf("calls = %d, want 4 after refreshErrorTTL", calls)
	}
}

func TestClaimString(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want string
		ok   bool
	}{
		{"a", "a", true}, {"", "", false}, {true, "true", true}, {float64(42), "42", true},
		{[]any{"a", "b", 3.5}, "a,b,3.5", true}, {[]any{}, "", false}, {nil, "", false},
		{map[string]any{"x": 1}, "", false},
	} {
		if got, ok := claimString(tc.v); got != tc.want || ok != tc.ok {
			t.Errorf("claimString(%v) = %q %v, want %q %v", tc.v, got, ok, tc.want, tc.ok)
		}
	}
}

// Without the provider (no end_session_endpoint known) logout still clears
// every form of the session and goes to the checked target.
func TestLogoutWithoutProvider(t *testing.T) {
	srv := newTestServer(t)
	name := srv.s.Cookie.Name
	cookie := name + "_0=a; " + name + "_1=b; " + name + "_state=c; other=d"
	for _, tc := range []struct{ path, want string }{
		{"/oauth2/sign_out", "/"},
		{"/oauth2/sign_out?rd=%2Fbye", "/bye"},
	} {
		resp, err := srv.Check(context.Background(), checkReq("POST", tc.path, map[string]string{"cookie": cookie, "origin": "https://app.example.com"}, nil))
		if err != nil || resp.GetDeniedResponse().GetStatus().GetCode() != http.StatusFound {
			t.Fatalf("%s: %v, %v", tc.path, resp, err)
		}
		if loc := deniedHeader(resp, "Location"); len(loc) != 1 || loc[0] != tc.want {
			t.Errorf("%s: Location %v, want %s", tc.path, loc, tc.want)
		}
		var cleared []string
		for _, c := range deniedHeader(resp, "Set-Cookie") {
			sc, err := http.ParseSetCookie(c)
			if err != nil || sc.MaxAge >= 0 {
				t.Errorf("Set-Cookie %q does not clear", c)
				continue
			}
			cleared = append(cleared, sc.Name)
		}
		slices.Sort(cleared)
		if strings.Join(cleared, ",") != name+"_0,"+name+"_1,"+name+"_state" {
			t.Errorf("cleared %v", cleared)
		}
	}
	if got := testutil.ToFloat64(srv.m.events.WithLabelValues(eventLogout)); got != 2 {
		t.Errorf("logout events = %v, want 2", got)
	}
}

// TestSignInReturnTargetIsAlwaysRedeemable: the sign-in started by a
// protected page returns to that page, unless the redirect policy would
// refuse it at the callback (an encoded space in a search query, a
// scheme-relative path): then it returns to "/". Before, the callback
// answered 400 and the user could never sign in from that page.
func TestSignInReturnTargetIsAlwaysRedeemable(t *testing.T) {
	srv := newTestServer(t)
	srv.disc.result = &discovered{endpoint: oauth2.Endpoint{AuthURL: "https://idp.example/auth", TokenURL: "https://idp.example/token"}}
	for _, tc := range []struct{ path, want string }{
		{"/a/b?c=d", "/a/b?c=d"},
		{"/search?q=a%20b", "/"},
		{"/files/my%20doc.pdf", "/"},
		{"//evil.example/", "/"},
	} {
		resp, err := srv.Check(context.Background(), checkReq("GET", tc.path, map[string]string{"accept": "text/html"}, nil))
		if err != nil || resp.GetDeniedResponse().GetStatus().GetCode() != http.StatusFound {
			t.Fatalf("%s: %v, %v; want 302", tc.path, resp, err)
		}
		fs := readFlowCookie(t, srv, resp)
		if fs.Return != tc.want {
			t.Errorf("%s: returns to %q, want %q", tc.path, fs.Return, tc.want)
		}
		if err := srv.redirect.check(fs.Return); err != nil {
			t.Errorf("%s: the callback would refuse the return target: %v", tc.path, err)
		}
	}
}

// TestExpiringSetPrunesAmortized: used states live up to 10 minutes, so a
// busy (or attacked) callback path holds many live ones. Pruning must not
// scan them all on every callback (quadratic, under the lock), and expired
// ones must still leave, and a value stays single-use.
func TestExpiringSetPrunesAmortized(t *testing.T) {
	s := newExpiringSet()
	now := time.Unix(1_000_000, 0)
	for i := range 20_000 {
		if !s.add(strconv.Itoa(i), now.Add(stateLifetime), now) {
			t.Fatalf("fresh value %d refused", i)
		}
	}
	if s.scans > 10 {
		t.Errorf("%d pruning passes for 20,000 live values, want amortized (a few)", s.scans)
	}
	if s.add("7", now.Add(stateLifetime), now) {
		t.Error("a used value was accepted again")
	}
	later := now.Add(stateLifetime + time.Second)
	for i := range 40_000 {
		s.add("new"+strconv.Itoa(i), later.Add(stateLifetime), later)
	}
	if _, kept := s.m["7"]; kept {
		t.Error("an expired value was never pruned")
	}
}

// TestDefaultCookiesHoldTheHostPrefix: a browser accepts a __Host- cookie
// only with Secure, Path=/ and no Domain. Every cookie the default
// configuration sets or clears (state, session, chunks) must say so, or
// the browser drops it and nobody can sign in.
func TestDefaultCookiesHoldTheHostPrefix(t *testing.T) {
	now := time.Now()
	srv := newTestServer(t)
	srv.disc.result = &discovered{endpoint: oauth2.Endpoint{AuthURL: "https://idp.example/auth", TokenURL: "https://idp.example/token"}}
	name := srv.s.Cookie.Name
	var lines []string
	// A sign-in over an old chunked session: the state cookie is set and
	// the session chunks cleared.
	resp, err := srv.Check(context.Background(), checkReq("GET", "/x", map[string]string{
		"accept": "text/html", "cookie": name + "_0=a; " + name + "_1=b"}, nil))
	if err != nil {
		t.Fatal(err)
	}
	lines = append(lines, deniedHeader(resp, "Set-Cookie")...)
	// A callback that fails clears its state cookie.
	resp, err = srv.Check(context.Background(), checkReq("GET", "/oauth2/callback?state=x", map[string]string{"cookie": srv.flowCookie("x") + "=garbage"}, nil))
	if err != nil {
		t.Fatal(err)
	}
	lines = append(lines, deniedHeader(resp, "Set-Cookie")...)
	// A session, small and chunked.
	small, big := aliceSession(now), aliceSession(now)
	big.Claims["groups"] = []any{strings.Repeat("g", 3*maxChunk)}
	for _, sess := range []*session{&small, &big} {
		set, err := srv.sessionCookies(parseRequest(checkReq("GET", "/", nil, nil)), sess)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, set...)
	}
	if len(lines) < 7 {
		t.Fatalf("only %d Set-Cookie values: %v", len(lines), lines)
	}
	for _, l := range lines {
		c, err := http.ParseSetCookie(l)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(c.Name, "__Host-") || !c.Secure || c.Path != "/" || c.Domain != "" || strings.Contains(strings.ToLower(l), "domain=") {
			t.Errorf("%s: want a __Host- name, Secure, Path=/ and no Domain", l)
		}
	}
}

// TestDuplicateCookiesAreNotRead: when a cookie of ours arrives twice
// (one planted by a sibling subdomain or another path), neither is used:
// the first is not necessarily ours.
func TestDuplicateCookiesAreNotRead(t *testing.T) {
	now := time.Now()
	srv := newTestServer(t)
	name := srv.s.Cookie.Name
	alice := sessionCookie(t, srv, aliceSession(now))
	mallorySess := aliceSession(now)
	mallorySess.Claims = map[string]any{"sub": "mallory", "email": "mallory@example.test"}
	mallory := sessionCookie(t, srv, mallorySess)
	big := aliceSession(now)
	big.Claims["groups"] = []any{strings.Repeat("g", 2*maxChunk)}
	set, err := srv.sessionCookies(parseRequest(checkReq("GET", "/", nil, nil)), &big)
	if err != nil {
		t.Fatal(err)
	}
	var chunks []string
	for _, l := range set {
		c, _ := http.ParseSetCookie(l)
		chunks = append(chunks, c.Name+"="+c.Value)
	}
	if len(chunks) < 2 {
		t.Fatalf("want a chunked session, got %v", set)
	}
	for _, tc := range []struct {
		name, cookie string
		allowed      bool
	}{
		{"one session cookie", alice, true},
		{"one chunked session", strings.Join(chunks, "; "), true},
		{"another cookie twice is not ours to judge", "other=1; " + alice + "; other=2", true},
		{"session cookie twice, garbage second", alice + "; " + name + "=garbage", false},
		{"session cookie twice, another user's first", mallory + "; " + alice, false},
		{"session cookie twice, the same value", alice + "; " + alice, false},
		{"a chunk twice", strings.Join(chunks, "; ") + "; " + chunks[0], false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := srv.Check(context.Background(), checkReq("GET", "/x", map[string]string{"accept": "application/json", "cookie": tc.cookie}, nil))
			if err != nil {
				t.Fatal(err)
			}
			if allowed := resp.GetOkResponse() != nil; allowed != tc.allowed {
				t.Fatalf("allowed = %v, want %v (%v)", allowed, tc.allowed, resp.GetDeniedResponse())
			}
			if !tc.allowed {
				if c := deniedHeader(resp, "WWW-Authenticate"); len(c) != 1 || !strings.Contains(c[0], `error="invalid_token"`) {
					t.Errorf("WWW-Authenticate = %q, want invalid_token", c)
				}
			}
		})
	}
	if got := testutil.ToFloat64(srv.m.failures.WithLabelValues(failDuplicateCookie)); got != 4 {
		t.Errorf("duplicate_cookie failures = %v, want 4", got)
	}

	// The state cookie twice at the callback, a valid one first: 400, not
	// a sign-in completed with whichever came first.
	flow := srv.flowCookie("abc")
	state := flow + "=" + srv.sealer.seal(flow, []byte(`{"s":"abc","r":"/","e":9999999999}`))
	planted := flow + "=" + srv.sealer.seal(flow, []byte(`{"s":"evil","r":"/","e":9999999999}`))
	resp, err := srv.Check(context.Background(), checkReq("GET", "/oauth2/callback?code=c&state=abc", map[string]string{"cookie": state + "; " + planted}, nil))
	if err != nil || resp.GetDeniedResponse().GetStatus().GetCode() != http.StatusBadRequest {
		t.Fatalf("state cookie twice: %v, %v; want 400", resp, err)
	}
	if got := testutil.ToFloat64(srv.m.failures.WithLabelValues(failDuplicateCookie)); got != 5 {
		t.Errorf("duplicate_cookie failures = %v, want 5", got)
	}
}

// TestLogoutRequiresSameOriginPost: signing out is a POST from this site's
// own page. Another site could otherwise sign users out with a link or an
// image (GET) or a form (POST), and a sibling subdomain is another site
// here too. A GET gets a page with a button that POSTs.
func TestLogoutRequiresSameOriginPost(t *testing.T) {
	srv := newTestServer(t)
	const app = "https://app.example.com"
	for _, tc := range []struct {
		name, method, path, host string
		headers                  map[string]string
		status                   int
	}{
		{"GET: the page", "GET", "/oauth2/sign_out", "", nil, 200},
		{"GET with Origin of this site: still only the page", "GET", "/oauth2/sign_out", "", map[string]string{"origin": app, "sec-fetch-site": "same-origin"}, 200},
		{"HEAD: the page", "HEAD", "/oauth2/sign_out", "", nil, 200},
		{"PUT", "PUT", "/oauth2/sign_out", "", map[string]string{"origin": app}, 405},
		{"POST from a client that says nothing", "POST", "/oauth2/sign_out", "", nil, 403},
		{"POST, Sec-Fetch-Site same-origin", "POST", "/oauth2/sign_out", "", map[string]string{"sec-fetch-site": "same-origin"}, 302},
		{"POST, Sec-Fetch-Site none (the user's own action)", "POST", "/oauth2/sign_out", "", map[string]string{"sec-fetch-site": "none"}, 302},
		{"POST, Sec-Fetch-Site cross-site", "POST", "/oauth2/sign_out", "", map[string]string{"sec-fetch-site": "cross-site"}, 403},
		{"POST, Sec-Fetch-Site same-site (a sibling subdomain)", "POST", "/oauth2/sign_out", "", map[string]string{"sec-fetch-site": "same-site"}, 403},
		{"POST, Sec-Fetch-Site cross-site wins over a matching Origin", "POST", "/oauth2/sign_out", "", map[string]string{"sec-fetch-site": "cross-site", "origin": app}, 403},
		{"POST, Origin of this site", "POST", "/oauth2/sign_out", "", map[string]string{"origin": app}, 302},
		{"POST, Origin of this site in upper case", "POST", "/oauth2/sign_out", "", map[string]string{"origin": "https://APP.example.com"}, 302},
		{"POST, Origin with a port, host without (Envoy strips it)", "POST", "/oauth2/sign_out", "", map[string]string{"origin": app + ":8443"}, 302},
		{"POST, Origin with rd", "POST", "/oauth2/sign_out?rd=%2Fbye", "", map[string]string{"origin": app}, 302},
		{"POST, Origin of another site", "POST", "/oauth2/sign_out", "", map[string]string{"origin": "https://evil.example"}, 403},
		{"POST, Origin of a sibling subdomain", "POST", "/oauth2/sign_out", "", map[string]string{"origin": "https://evil.example.com"}, 403},
		{"POST, Origin of a subdomain", "POST", "/oauth2/sign_out", "", map[string]string{"origin": "https://x.app.example.com"}, 403},
		{"POST, Origin that ends like this host", "POST", "/oauth2/sign_out", "", map[string]string{"origin": "https://app.example.com.evil.example"}, 403},
		{"POST, Origin over http", "POST", "/oauth2/sign_out", "", map[string]string{"origin": "http://app.example.com"}, 403},
		{"POST, Origin null (sandboxed or privacy-sensitive context)", "POST", "/oauth2/sign_out", "", map[string]string{"origin": "null"}, 403},
		{"POST, Origin with user information", "POST", "/oauth2/sign_out", "", map[string]string{"origin": "https://evil@app.example.com"}, 403},
		{"POST, host with a port, same port", "POST", "/oauth2/sign_out", "app.example.com:8443", map[string]string{"origin": app + ":8443"}, 302},
		{"POST, host with a port, Origin on the default port", "POST", "/oauth2/sign_out", "app.example.com:8443", map[string]string{"origin": app}, 403},
		{"POST, host with the default port, Origin without", "POST", "/oauth2/sign_out", "app.example.com:443", map[string]string{"origin": app}, 302},
	} {
		t.Run(tc.name, func(t *testing.T) {
			headers := map[string]string{"cookie": srv.s.Cookie.Name + "=x"}
			for k, v := range tc.headers {
				headers[k] = v
			}
			req := checkReq(tc.method, tc.path, headers, nil)
			if tc.host != "" {
				req.Attributes.Request.Http.Host = tc.host
			}
			logouts := testutil.ToFloat64(srv.m.events.WithLabelValues(eventLogout))
			refused := testutil.ToFloat64(srv.m.failures.WithLabelValues(failLogoutOrigin))
			resp, err := srv.Check(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if got := int(resp.GetDeniedResponse().GetStatus().GetCode()); got != tc.status || resp.GetOkResponse() != nil {
				t.Fatalf("status %d, want %d: %v", got, tc.status, resp)
			}
			cleared := len(deniedHeader(resp, "Set-Cookie")) > 0
			if signedOut := tc.status == 302; cleared != signedOut {
				t.Errorf("cookies cleared = %v, want %v", cleared, signedOut)
			}
			if got := testutil.ToFloat64(srv.m.events.WithLabelValues(eventLogout)) - logouts; (got == 1) != (tc.status == 302) {
				t.Errorf("logout events +%v", got)
			}
			if got := testutil.ToFloat64(srv.m.failures.WithLabelValues(failLogoutOrigin)) - refused; (got == 1) != (tc.status == 403) {
				t.Errorf("logout_origin failures +%v", got)
			}
			switch tc.status {
			case 200:
				body := resp.GetDeniedResponse().GetBody()
				if !strings.Contains(body, `<form method="post" action="/oauth2/sign_out">`) || strings.Contains(body, "<script") {
					t.Errorf("page = %s, want a form that POSTs to the logout path, no script", body)
				}
				for name, want := range map[string]string{"Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store", "X-Frame-Options": "DENY"} {
					if got := deniedHeader(resp, name); len(got) != 1 || got[0] != want {
						t.Errorf("%s = %q, want %q", name, got, want)
					}
				}
				if csp := deniedHeader(resp, "Content-Security-Policy"); len(csp) != 1 || !strings.Contains(csp[0], "frame-ancestors 'none'") {
					t.Errorf("Content-Security-Policy = %q, want frame-ancestors 'none'", csp)
				}
			case 405:
				if got := deniedHeader(resp, "Allow"); len(got) != 1 || got[0] != "GET, HEAD, POST" {
					t.Errorf("Allow = %q", got)
				}
			}
		})
	}
}

// The page keeps a checked rd in its form, escaped; a bad rd is refused
// before any page.
func TestLogoutPageKeepsTheTarget(t *testing.T) {
	srv := newTestServer(t)
	srv.s.AllowedRedirectHosts = []string{"app.example.com"}
	srv.redirect = newRedirectPolicy(srv.s.AllowedRedirectHosts)
	for _, tc := range []struct {
		rd, action string
		status     int
	}{
		{"/bye?a=1&b=2", `action="/oauth2/sign_out?rd=%2Fbye%3Fa%3D1%26b%3D2"`, 200},
		{`https://app.example.com/"><script>`, `action="/oauth2/sign_out?rd=https%3A%2F%2Fapp.example.com%2F%22%3E%3Cscript%3E"`, 200},
		{"https://evil.example/", "", 400},
	} {
		resp, err := srv.Check(context.Background(), checkReq("GET", "/oauth2/sign_out?rd="+url.QueryEscape(tc.rd), nil, nil))
		if err != nil {
			t.Fatal(err)
		}
		d := resp.GetDeniedResponse()
		if int(d.GetStatus().GetCode()) != tc.status || !strings.Contains(d.GetBody(), tc.action) {
			t.Errorf("rd %q: status %d body %s; want %d with %s", tc.rd, d.GetStatus().GetCode(), d.GetBody(), tc.status, tc.action)
		}
	}
}

// TestSessionLifetimeEndsACopiedCookie: a session cookie is a bearer
// credential; a copy keeps working until cookie.sessionLifetime after the
// sign-in, whatever the tokens inside say and whether or not the browser
// signed out. A short lifetime bounds that window.
func TestSessionLifetimeEndsACopiedCookie(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	srv := newTestServer(t)
	srv.s.Cookie.SessionLifetime.Duration = 15 * time.Minute
	sess := aliceSession(t0)
	sess.Expiry = t0.Add(time.Hour).Unix() // tokens valid far longer than the lifetime
	sess.Refresh = "refresh-token"
	cookie := sessionCookie(t, srv, sess)
	for _, tc := range []struct {
		at      time.Duration
		allowed bool
	}{
		{0, true},
		{14*time.Minute + 59*time.Second, true},
		{15 * time.Minute, false},
		{30 * time.Minute, false},
	} {
		srv.now = func() time.Time { return t0.Add(tc.at) }
		resp, err := srv.Check(context.Background(), checkReq("GET", "/x", map[string]string{"cookie": cookie, "accept": "application/json"}, nil))
		if err != nil {
			t.Fatal(err)
		}
		if allowed := resp.GetOkResponse() != nil; allowed != tc.allowed {
			t.Errorf("%v after sign-in: allowed = %v, want %v", tc.at, allowed, tc.allowed)
		}
	}
	// The browser is told to drop the cookie when the lifetime ends.
	srv.now = func() time.Time { return t0.Add(5 * time.Minute) }
	set, err := srv.sessionCookies(parseRequest(checkReq("GET", "/", nil, nil)), &sess)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := http.ParseSetCookie(set[0]); err != nil || c.MaxAge != 600 {
		t.Errorf("Set-Cookie %q: want Max-Age=600 (the 10 minutes left)", set[0])
	}
}
