package oidc

import (
	"bytes"
	"context"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
)

// jar is a browser's cookies for the app: what Set-Cookie leaves.
type jar map[string]string

func (j jar) apply(t *testing.T, resp *authv3.CheckResponse) {
	t.Helper()
	for _, c := range setCookies(t, resp) {
		if c.MaxAge < 0 {
			delete(j, c.Name)
		} else {
			j[c.Name] = c.Value
		}
	}
}

func (j jar) header() string {
	var parts []string
	for n, v := range j {
		parts = append(parts, n+"="+v)
	}
	sort.Strings(parts)
	return strings.Join(parts, "; ")
}

// tab is one sign-in started in a browser: the provider URL it was sent to.
type tab struct{ authorize *url.URL }

// startTab opens path in the browser without a session: a sign-in starts.
func startTab(t *testing.T, srv *Server, j jar, path string) tab {
	t.Helper()
	resp, err := srv.Check(context.Background(), checkReq("GET", path, map[string]string{"accept": "text/html", "cookie": j.header()}, nil))
	if err != nil || resp.GetDeniedResponse().GetStatus().GetCode() != 302 {
		t.Fatalf("GET %s: %v, %v; want a sign-in", path, resp, err)
	}
	j.apply(t, resp)
	u, err := url.Parse(deniedHeader(resp, "Location")[0])
	if err != nil {
		t.Fatal(err)
	}
	return tab{u}
}

// finish comes back from the provider to the callback with the tab's state.
func (tb tab) finish(t *testing.T, srv *Server, op *standInOP, j jar) *authv3.CheckResponse {
	t.Helper()
	op.nonce = tb.authorize.Query().Get("nonce") // the provider echoes the sign-in's nonce
	path := "/oauth2/callback?code=c&state=" + url.QueryEscape(tb.authorize.Query().Get("state"))
	resp, err := srv.Check(context.Background(), checkReq("GET", path, map[string]string{"accept": "text/html", "cookie": j.header()}, nil))
	if err != nil {
		t.Fatal(err)
	}
	j.apply(t, resp)
	return resp
}

func flowNames(srv *Server, j jar) []string {
	var names []string
	for n := range j {
		if srv.isFlowCookie(n) {
			names = append(names, n)
		}
	}
	return names
}

// TestTwoSignInsAtOnce: two tabs start signing in, then finish in either
// order; both land on their page signed in. With one shared state cookie
// the second sign-in overwrote the first's: the first tab's callback
// failed "state does not match" and cleared the cookie, so the second
// failed too.
func TestTwoSignInsAtOnce(t *testing.T) {
	for _, order := range []string{"older first", "newer first"} {
		t.Run(order, func(t *testing.T) {
			op := newStandInOP(t, map[string]any{"sub": "u", "email": "u@example.test"})
			srv := newServerFor(t, op, &bytes.Buffer{}, nil)
			j := jar{}
			tabs := []tab{startTab(t, srv, j, "/a?x=1"), startTab(t, srv, j, "/b")}
			want := []string{"/a?x=1", "/b"}
			if n := len(flowNames(srv, j)); n != 2 {
				t.Errorf("%d state cookies in the browser, want one per sign-in", n)
			}
			idx := []int{0, 1}
			if order == "newer first" {
				idx = []int{1, 0}
			}
			for _, i := range idx {
				resp := tabs[i].finish(t, srv, op, j)
				if loc := deniedHeader(resp, "Location"); resp.GetDeniedResponse().GetStatus().GetCode() != 302 || len(loc) != 1 || loc[0] != want[i] {
					t.Fatalf("tab %d's callback: %d %v %.200s; want 302 to %s", i, resp.GetDeniedResponse().GetStatus().GetCode(), loc, resp.GetDeniedResponse().GetBody(), want[i])
				}
				for _, c := range setCookies(t, resp) {
					if srv.isFlowCookie(c.Name) && c.Name != srv.flowCookie(tabs[i].authorize.Query().Get("state")) {
						t.Errorf("tab %d's callback touched another sign-in's cookie %s", i, c.Name)
					}
				}
			}
			if names := flowNames(srv, j); len(names) != 0 {
				t.Errorf("state cookies left: %v", names)
			}
			if _, ok := j[srv.s.Cookie.Name]; !ok {
				t.Error("no session after both sign-ins")
			}
		})
	}
}

// TestSignInsInProgressAreBounded: each sign-in adds a state cookie; a
// browser holds at most maxFlows, the oldest pushed out first, and the
// newest still finish.
func TestSignInsInProgressAreBounded(t *testing.T) {
	op := newStandInOP(t, map[string]any{"sub": "u", "email": "u@example.test"})
	srv := newServerFor(t, op, &bytes.Buffer{}, nil)
	j := jar{srv.legacyState: "from-an-older-version"}
	now := srv.now()
	var tabs []tab
	for i := range maxFlows + 3 {
		srv.now = func() time.Time { return now.Add(time.Duration(i) * time.Second) } // ordered by age
		tabs = append(tabs, startTab(t, srv, j, "/p"+strconv.Itoa(i)))
		if n := len(flowNames(srv, j)); n > maxFlows {
			t.Fatalf("after %d sign-ins: %d state cookies, want at most %d", i+1, n, maxFlows)
		}
	}
	if _, ok := j[srv.legacyState]; ok {
		t.Error("the state cookie of the older version was kept")
	}
	if n := len(flowNames(srv, j)); n != maxFlows {
		t.Errorf("%d state cookies, want %d", n, maxFlows)
	}
	if resp := tabs[0].finish(t, srv, op, j); resp.GetDeniedResponse().GetStatus().GetCode() != 400 {
		t.Errorf("the oldest sign-in, pushed out: %v; want 400 (sign in again)", resp.GetDeniedResponse().GetStatus())
	}
	last := len(tabs) - 1
	if resp := tabs[last].finish(t, srv, op, j); strings.Join(deniedHeader(resp, "Location"), "") != "/p"+strconv.Itoa(last) {
		t.Errorf("the newest sign-in: %v", resp.GetDeniedResponse())
	}
	if resp := tabs[last-maxFlows+1].finish(t, srv, op, j); len(deniedHeader(resp, "Location")) != 1 {
		t.Errorf("the oldest sign-in kept: %v", resp.GetDeniedResponse())
	}
}
