package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/portcullis/portcullis/e2e/harness"
)

// TestOIDCBrowser drives the OIDC flows in headless Chromium, which
// enforces what an HTTP client with a cookie jar does not: Secure,
// SameSite and the __Host- prefix, the ~4 KB cookie limit, Sec-Fetch-Site
// and Origin on form posts, real TLS verification. The app keeps its real
// names and default port (the browser maps them to Envoy's listeners) and
// trusts only the stack's CA. The provider is the real one, on
// http://127.0.0.1.
func TestOIDCBrowser(t *testing.T) {
	s := startOIDCStack(t, harness.NewSigningJWK(t), false)
	harness.Eventually(t, 30*time.Second, func() error {
		p, err := newBrowser(t, s).try(harness.MustRequest(t, oidcApp+"/"))
		if err != nil {
			return err
		}
		if p.StatusCode != http.StatusFound {
			return fmt.Errorf("GET /: status %d: %s", p.StatusCode, p.body)
		}
		return nil
	})
	br := harness.StartBrowser(t, harness.BrowserConfig{
		CAPEM: s.ca.CertPEM,
		HostRules: []string{
			"MAP " + oidcHost + ":443 " + s.HTTPSAddr,
			"MAP " + oidcClaimsHost + ":443 " + s.HTTPSAddr,
			"MAP *.oidc.test:80 " + s.HTTPAddr,
		},
	})

	alice := br.NewSession(t)
	t.Run("sign-in through the provider's login page returns to the original URL with a __Host- session cookie", func(t *testing.T) {
		alice.Watch(t)
		resp := browserSignIn(t, s, alice, oidcApp+"/hello/page?x=1", "alice")
		if resp.Status != http.StatusOK || alice.URL() != oidcApp+"/hello/page?x=1" {
			t.Fatalf("after sign-in: status %d at %s, want 200 at %s/hello/page?x=1", resp.Status, alice.URL(), oidcApp)
		}
		e := pageEcho(t, alice)
		if err := harness.WantHeaders(e.Headers, map[string]string{"Auth-Username": "alice@example.test", "Auth-Groups": "users,admins"}); err != nil {
			t.Error(err)
		}
		cookies := alice.Cookies(oidcApp + "/")
		if len(cookies) != 1 || cookies[0].Name != oidcCookie {
			t.Fatalf("cookies %v, want the session cookie alone (state cookie cleared)", cookieNames(cookies))
		}
		// As the browser stored it: host-only, Secure, HttpOnly, Lax, Path=/.
		if c := cookies[0]; !c.Secure || !c.HTTPOnly || c.SameSite != network.CookieSameSiteLax || c.Path != "/" || c.Domain != oidcHost {
			t.Errorf("session cookie %+v", c)
		}
	})

	t.Run("a session in several cookie chunks is stored and sent back by the browser", func(t *testing.T) {
		big := br.NewSession(t)
		browserSignIn(t, s, big, oidcApp+"/big", "big")
		e := pageEcho(t, big)
		if !strings.HasSuffix(e.Headers.Get("Auth-Groups"), "team-with-a-rather-long-name-149") {
			t.Errorf("Auth-Groups = %.60q...", e.Headers.Get("Auth-Groups"))
		}
		cookies := big.Cookies(oidcApp + "/")
		if len(cookies) < 3 {
			t.Fatalf("cookies %v, want chunks %s_0, _1, ...", cookieNames(cookies), oidcCookie)
		}
		for i, c := range cookies {
			if c.Name != fmt.Sprintf("%s_%d", oidcCookie, i) && !strings.HasPrefix(c.Name, oidcCookie+"_") {
				t.Errorf("cookie %s, want chunks only", c.Name)
			}
			if c.Size > 4096 {
				t.Errorf("cookie %s is %d bytes: browsers keep 4096", c.Name, c.Size)
			}
		}
		// Every chunk goes back and is reassembled.
		if resp := big.Navigate(oidcApp + "/big/again"); resp.Status != http.StatusOK {
			t.Fatalf("second request: status %d", resp.Status)
		}
		if e := pageEcho(t, big); e.Path != "/big/again" || strings.Contains(e.Headers.Get("Cookie"), oidcCookie) {
			t.Errorf("echo %s, Cookie %q: want /big/again without our cookies", e.Path, e.Headers.Get("Cookie"))
		}
	})

	t.Run("an expired session is refreshed in the browser without a sign-in", func(t *testing.T) {
		alice.Watch(t)
		before := alice.Cookies(oidcApp + "/")
		refreshes := func() float64 {
			return metric(t, s.replicas[0], `portcullis_authserver_oidc_events_total{event="refresh"}`) +
				metric(t, s.replicas[1], `portcullis_authserver_oidc_events_total{event="refresh"}`)
		}
		n := refreshes()
		time.Sleep(oidcTokenTTL + 2*time.Second)
		if resp := alice.Navigate(oidcApp + "/after-expiry"); resp.Status != http.StatusOK || alice.URL() != oidcApp+"/after-expiry" {
			t.Fatalf("status %d at %s, want 200 without leaving the app", resp.Status, alice.URL())
		}
		if e := pageEcho(t, alice); e.Headers.Get("Auth-Username") != "alice@example.test" {
			t.Errorf("Auth-Username = %q", e.Headers.Get("Auth-Username"))
		}
		if got := refreshes(); got != n+1 {
			t.Errorf("refresh events %v -> %v, want +1", n, got)
		}
		after := alice.Cookies(oidcApp + "/")
		if len(after) != 1 || len(before) != 1 || after[0].Value == before[0].Value {
			t.Errorf("the session cookie was not replaced: %v -> %v", cookieNames(before), cookieNames(after))
		}
	})

	t.Run("another site's sign-out form is refused", func(t *testing.T) {
		alice.Watch(t)
		// A page elsewhere that posts to our logout path (a link styled as
		// a button, a hidden auto-submitting form, ...).
		evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprintf(w, `<form method="post" action="%s/oauth2/sign_out"><button type="submit">Win a prize</button></form>`, oidcApp)
		}))
		defer evil.Close()
		alice.Navigate(evil.URL)
		if resp := alice.Click(`button[type="submit"]`); resp.Status != http.StatusForbidden {
			t.Errorf("cross-site sign-out POST: status %d, want 403", resp.Status)
		}
		if resp := alice.Navigate(oidcApp + "/still-signed-in"); resp.Status != http.StatusOK || alice.URL() != oidcApp+"/still-signed-in" {
			t.Errorf("after the cross-site POST: status %d at %s, want still signed in", resp.Status, alice.URL())
		}
	})

	t.Run("sign-out: the page's button posts, the provider confirms, back signed out", func(t *testing.T) {
		alice.Watch(t)
		resp := alice.Navigate(oidcApp + "/oauth2/sign_out")
		if resp.Status != http.StatusOK || !alice.Has(`form[method="post"] button[type="submit"]`) {
			t.Fatalf("GET /oauth2/sign_out: status %d, no sign-out button: %s", resp.Status, alice.Text())
		}
		if len(alice.Cookies(oidcApp+"/")) != 1 {
			t.Fatalf("the page alone changed the cookies: %v", cookieNames(alice.Cookies(oidcApp+"/")))
		}
		resp = alice.Click(`button[type="submit"]`)
		if !strings.HasPrefix(alice.URL(), s.op.Issuer+"/session/end") {
			t.Fatalf("after the button: status %d at %s, want the provider's end-session page", resp.Status, alice.URL())
		}
		if c := alice.Cookies(oidcApp + "/"); len(c) != 0 {
			t.Errorf("cookies left after sign-out: %v", cookieNames(c))
		}
		// The provider asks to confirm, then sends us to post_logout_redirect_uri.
		resp = alice.Click(`button[type="submit"], input[type="submit"]`)
		if resp.Status != http.StatusOK || alice.URL() != oidcSignedOut {
			t.Fatalf("after the provider's confirmation: status %d at %s, want %s", resp.Status, alice.URL(), oidcSignedOut)
		}
		// Signed out at the provider too: the login form again.
		alice.Navigate(oidcApp + "/hello")
		if !strings.HasPrefix(alice.URL(), s.op.Issuer+"/") || !alice.Has(`input[name="login"]`) {
			t.Errorf("after sign-out /hello went to %s, want the provider's login form", alice.URL())
		}
	})

	t.Run("error pages: session too large, refused redirect", func(t *testing.T) {
		huge := br.NewSession(t)
		before := s.tooLarge(t)
		resp := browserSignIn(t, s, huge, oidcApp+"/huge", "huge")
		if resp.Status != http.StatusInternalServerError || !strings.Contains(huge.Text(), "too large") {
			t.Errorf("status %d at %s: %.200q; want 500 and the too-large page", resp.Status, huge.URL(), huge.Text())
		}
		if c := huge.Cookies(oidcApp + "/"); len(c) != 0 {
			t.Errorf("cookies left: %v (state cookie not cleared?)", cookieNames(c))
		}
		if got := s.tooLarge(t); got != before+1 {
			t.Errorf("session_too_large %v -> %v, want +1", before, got)
		}
		// With a claim filter the same user signs in (their provider
		// session is reused: no login form this time).
		resp = browserSignIn(t, s, huge, oidcClaimsApp+"/claims?y=2", "huge")
		if resp.Status != http.StatusOK || huge.URL() != oidcClaimsApp+"/claims?y=2" {
			t.Errorf("claims host: status %d at %s", resp.Status, huge.URL())
		}
		resp = huge.Navigate(oidcApp + "/oauth2/sign_in?rd=" + url.QueryEscape("https://evil.example/"))
		if resp.Status != http.StatusBadRequest || !strings.Contains(huge.Text(), "400 Bad Request") {
			t.Errorf("foreign rd: status %d: %.200q; want 400", resp.Status, huge.Text())
		}
	})
}

// browserSignIn navigates to u and goes through the provider's login and
// consent pages as login, until the browser leaves the provider; it
// returns the last response.
func browserSignIn(t *testing.T, s *oidcStack, sess *harness.Session, u, login string) *network.Response {
	t.Helper()
	resp := sess.Navigate(u)
	for range 6 {
		if !strings.HasPrefix(sess.URL(), s.op.Issuer+"/") {
			return resp
		}
		if sess.Has(`input[name="login"]`) {
			sess.Do(chromedp.SendKeys(chromedp.CSS(`input[name="login"]`), login),
				chromedp.SendKeys(chromedp.CSS(`input[name="password"]`), "any"))
		} else if !sess.Has(`button[type="submit"]`) {
			t.Fatalf("provider page %s without a form: %.300s", sess.URL(), sess.Text())
		}
		resp = sess.Click(`button[type="submit"]`)
	}
	t.Fatalf("sign-in from %s did not leave the provider: at %s", u, sess.URL())
	return nil
}

// pageEcho decodes the echo upstream's answer shown in the tab (Chromium
// shows JSON in a <pre>).
func pageEcho(t *testing.T, sess *harness.Session) *harness.EchoRequest {
	t.Helper()
	text := harness.Run(sess, chromedp.Evaluate[string](`(document.querySelector("pre") || document.body).textContent`))
	e, err := harness.DecodeEcho([]byte(text))
	if err != nil {
		t.Fatalf("%s: not the echo upstream: %v: %.300s", sess.URL(), err, text)
	}
	return e
}

func cookieNames(cs []*network.Cookie) []string {
	var names []string
	for _, c := range cs {
		names = append(names, c.Name)
	}
	return names
}
