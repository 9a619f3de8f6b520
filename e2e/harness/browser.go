package harness

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// BrowserConfig configures StartBrowser.
type BrowserConfig struct {
	// CAPEM is trusted for TLS: added to the browser's own NSS database,
	// so certificates are verified for real (chain, host name, expiry).
	CAPEM []byte
	// HostRules map host:port to loopback addresses, in Chromium's
	// --host-resolver-rules syntax ("MAP app.example.test:443
	// 127.0.0.1:18443"): pages keep their real names and default ports,
	// which cookies, origins and certificates depend on. Every other name
	// fails to resolve, so nothing leaves the machine.
	HostRules []string
}

// Browser is a headless Chromium, the browser itself with its cookie
// rules (Secure, SameSite, __Host-, about 4 KB per cookie), driven over
// the DevTools protocol with chromedp.
type Browser struct {
	t   testing.TB
	ctx context.Context // the browser; each Session opens its own context
}

// ChromiumPath finds the Chromium binary: $PORTCULLIS_CHROMIUM, else
// chromium (Debian's package) or chromium-browser on PATH. The test fails,
// never skips, without one.
func ChromiumPath(t testing.TB) string {
	t.Helper()
	names := []string{"chromium", "chromium-browser"}
	if p := os.Getenv("PORTCULLIS_CHROMIUM"); p != "" {
		names = []string{p}
	}
	for _, name := range names {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatalf("Chromium not found (%s): run `make tools` "+
		"(hack/install-tools.sh chromium installs the Debian packages chromium and libnss3-tools)", strings.Join(names, ", "))
	return ""
}

// StartBrowser starts headless Chromium for the test; it is stopped when
// the test ends.
func StartBrowser(t testing.TB, cfg BrowserConfig) *Browser {
	t.Helper()
	chromium := ChromiumPath(t)
	certutil, err := exec.LookPath("certutil")
	if err != nil {
		t.Fatalf("certutil not found (it makes Chromium trust the test CA): run `make tools` " +
			"(hack/install-tools.sh chromium installs the Debian package libnss3-tools)")
	}
	// Chromium on Linux reads trust anchors from $HOME/.pki/nssdb: a home
	// of its own trusts the test CA and nothing the machine's user added.
	home := t.TempDir()
	nssdb := "sql:" + filepath.Join(home, ".pki", "nssdb")
	if err := os.MkdirAll(filepath.Join(home, ".pki", "nssdb"), 0o700); err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(home, "ca.pem")
	if err := os.WriteFile(caFile, cfg.CAPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"-d", nssdb, "-N", "--empty-password"},
		{"-d", nssdb, "-A", "-t", "C,,", "-n", "portcullis-test-ca", "-i", caFile},
	} {
		if out, err := exec.Command(certutil, args...).CombinedOutput(); err != nil {
			t.Fatalf("certutil %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	rules := append(append([]string{}, cfg.HostRules...), "MAP * ~NOTFOUND", "EXCLUDE 127.0.0.1")
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Env("HOME="+home),
		chromedp.Flag("host-resolver-rules", strings.Join(rules, ", ")),
		chromedp.WindowSize(1000, 800),
	)
	if os.Geteuid() == 0 {
		// Chromium refuses to run as root with its OS sandbox, which
		// confines renderer processes; web rules (cookies, origins, TLS)
		// are the same without it.
		opts = append(opts, chromedp.NoSandbox)
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// The first call starts the browser; its context must not time out,
	// or the browser would die with it.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", chromium, err)
	}
	return &Browser{t: t, ctx: ctx}
}

// Session is one user: a tab in a browser context of its own (cookies
// and storage not shared with other sessions), like a private window.
type Session struct {
	t   testing.TB
	ctx context.Context
}

// NewSession opens a tab in a new browser context; it is closed when t
// ends, after a screenshot if t failed.
func (b *Browser) NewSession(t testing.TB) *Session {
	t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithNewBrowserContext())
	s := &Session{t: t, ctx: ctx}
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("new browser context: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			s.Screenshot()
		}
		cancel()
	})
	return s
}

// Watch takes a screenshot when t fails (a subtest using a session of
// its parent's).
func (s *Session) Watch(t testing.TB) {
	t.Cleanup(func() {
		if t.Failed() {
			s.screenshot(t)
		}
	})
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// Screenshot saves the page as PNG and logs the path. The file goes to a
// folder of its own under the system temp dir, not t.TempDir(), which the
// test removes when it ends.
func (s *Session) Screenshot() { s.screenshot(s.t) }

func (s *Session) screenshot(t testing.TB) {
	ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
	defer cancel()
	url := s.URL()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Logf("screenshot failed: %v", err)
		return
	}
	dir, err := os.MkdirTemp("", "portcullis-browser-"+unsafeName.ReplaceAllString(t.Name(), "_")+"-")
	if err == nil {
		path := filepath.Join(dir, "screenshot.png")
		if err = os.WriteFile(path, png, 0o644); err == nil {
			t.Logf("screenshot of %s: %s", url, path)
			return
		}
	}
	t.Logf("screenshot not saved: %v", err)
}

// Do runs chromedp actions in the tab, failing the test on an error or
// after 20 seconds.
func (s *Session) Do(actions ...chromedp.Action[chromedp.Void]) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		s.t.Fatalf("browser: %v (at %s)", err, s.URL())
	}
}

// Run runs one action in the tab and returns its value, failing the test
// on an error or after 20 seconds.
func Run[T any](s *Session, action chromedp.Action[T]) T {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.ctx, 20*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, action)
	if err != nil {
		s.t.Fatalf("browser: %v (at %s)", err, s.URL())
	}
	return v
}

// Navigate loads url like the address bar and returns the final response
// (after redirects).
func (s *Session) Navigate(url string) *network.Response {
	s.t.Helper()
	// Chromium fails a load when the machine's network interfaces change
	// (other tests add and remove links): that is no answer from the page,
	// and a GET can be sent again.
	for range 2 {
		ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
		resp, err := chromedp.RunResponse(ctx, chromedp.Navigate(url))
		cancel()
		if err == nil || !strings.Contains(err.Error(), "ERR_NETWORK_CHANGED") {
			if err != nil {
				s.t.Fatalf("browser: navigate to %s: %v (at %s)", url, err, s.URL())
			}
			return resp
		}
		s.t.Logf("navigate to %s: %v; again", url, err)
	}
	return s.respond("navigate to "+url, chromedp.Navigate(url))
}

// Click clicks the element matching the CSS selector and returns the
// response of the navigation it starts (a form submission, a link).
func (s *Session) Click(selector string) *network.Response {
	s.t.Helper()
	return s.respond("click "+selector, chromedp.Click(chromedp.CSS(selector)))
}

func (s *Session) respond(what string, action chromedp.Action[chromedp.Void]) *network.Response {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
	defer cancel()
	resp, err := chromedp.RunResponse(ctx, action)
	if err != nil {
		s.t.Fatalf("browser: %s: %v (at %s)", what, err, s.URL())
	}
	return resp
}

// URL is the tab's current URL.
func (s *Session) URL() string {
	ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
	defer cancel()
	u, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		return fmt.Sprintf("(unknown: %v)", err)
	}
	return u
}

// Text is the text of the page's body as rendered.
func (s *Session) Text() string {
	s.t.Helper()
	return Run(s, chromedp.Text(chromedp.CSS("body")))
}

// Has reports whether an element matches the CSS selector now.
func (s *Session) Has(selector string) bool {
	s.t.Helper()
	return Run(s, chromedp.Evaluate[int](fmt.Sprintf("document.querySelectorAll(%q).length", selector))) > 0
}

// Cookies returns the cookies the browser holds for url (what it would
// send there), with their attributes as the browser stored them.
func (s *Session) Cookies(url string) []*network.Cookie {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
	defer cancel()
	r, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{url}})
	if err != nil {
		s.t.Fatalf("browser: cookies of %s: %v", url, err)
	}
	return r.Cookies
}
