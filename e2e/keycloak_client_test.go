package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/portcullis/portcullis/e2e/harness"
)

// kcClient is a user agent with a cookie jar: the app's hosts go to
// Envoy's HTTPS listener, Keycloak is reached directly; redirects are
// followed step by step and Keycloak's forms filled in.
type kcClient struct {
	t      *testing.T
	client *http.Client
	issuer string
}

func newKCClient(t *testing.T, s *kcStack) *kcClient {
	jar, _ := cookiejar.New(nil)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(s.ca.CertPEM)
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	return &kcClient{t: t, issuer: s.issuer, client: &http.Client{
		Jar:     jar,
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				if host, _, _ := net.SplitHostPort(addr); strings.HasSuffix(host, ".keycloak.test") {
					addr = s.HTTPSAddr
				}
				return dialer.DialContext(ctx, network, addr)
			},
			TLSClientConfig:   &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
			DisableKeepAlives: true,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// on is the same user agent (cookies) failing t: a subtest's.
func (c *kcClient) on(t *testing.T) *kcClient {
	return &kcClient{t: t, client: c.client, issuer: c.issuer}
}

func (c *kcClient) get(u string, header ...string) *page {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		c.t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return c.do(req)
}

func (c *kcClient) do(req *http.Request) *page {
	c.t.Helper()
	b := &browser{t: c.t, client: c.client}
	return b.do(req)
}

// try GETs u, returning the error instead of failing.
func (c *kcClient) try(u string) (*page, error) {
	return (&browser{t: c.t, client: c.client}).try(harness.MustRequest(c.t, u))
}

// post sends an empty form POST with one header.
func (c *kcClient) post(u, name, value string) *page {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(""))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set(name, value)
	return c.do(req)
}

// bearer GETs u with the token.
func (c *kcClient) bearer(u, token string) *page {
	c.t.Helper()
	return c.get(u, "Authorization", "Bearer "+token)
}

func (c *kcClient) atKeycloak(u *url.URL) bool { return strings.HasPrefix(u.String(), c.issuer+"/") }

// signIn starts at u and, when the app sends it to Keycloak, signs in
// there as username and follows the redirects back on the app's hosts.
func (c *kcClient) signIn(u, username string) *flow {
	c.t.Helper()
	f := &flow{final: c.get(u)}
	if !isRedirect(f.final) || !c.atKeycloak(f.final.location(c.t)) {
		return f
	}
	f.authorize = f.final.location(c.t)
	f.callback = c.login(f.authorize, username)
	f.final = c.follow(f.callback)
	return f
}

// login goes through Keycloak from u, submitting its login form (and
// any other form it shows, such as the logout confirmation), and returns
// the first redirect that leaves Keycloak.
func (c *kcClient) login(u *url.URL, username string) *url.URL {
	c.t.Helper()
	p := c.get(u.String())
	for range 10 {
		switch {
		case isRedirect(p):
			next := p.location(c.t)
			if !c.atKeycloak(next) {
				return next
			}
			p = c.get(next.String())
		case p.StatusCode == http.StatusOK:
			p = c.submit(p, map[string]string{"username": username, "password": kcPassword})
		default:
			c.t.Fatalf("%s: status %d: %.500s", p.Request.URL, p.StatusCode, p.body)
		}
	}
	c.t.Fatalf("no way out of Keycloak from %s", u)
	return nil
}

// follow GETs u and the redirects after it on the app's hosts, and
// returns the first other answer (a page, or a redirect to Keycloak).
func (c *kcClient) follow(u *url.URL) *page {
	c.t.Helper()
	p := c.get(u.String())
	for range 10 {
		if !isRedirect(p) || c.atKeycloak(p.location(c.t)) {
			return p
		}
		p = c.get(p.location(c.t).String())
	}
	c.t.Fatalf("redirect loop from %s", u)
	return nil
}

func (c *kcClient) submit(p *page, fill map[string]string) *page {
	c.t.Helper()
	resp, body, err := harness.SubmitForm(c.client, p.Request.URL, p.body, fill)
	if err != nil {
		c.t.Fatal(err)
	}
	return &page{Response: resp, body: body}
}

func isRedirect(p *page) bool { return p.StatusCode >= 300 && p.StatusCode < 400 }

// echo decodes the upstream's answer, failing unless p is one (200).
func (c *kcClient) echo(p *page) *harness.EchoRequest {
	c.t.Helper()
	return (&browser{t: c.t}).echo(p)
}

// cookies are the jar's cookies for app (an https://host URL).
func (c *kcClient) cookies(app string) []*http.Cookie {
	u, _ := url.Parse(app + "/")
	return c.client.Jar.Cookies(u)
}
