package harness

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"
)

// OIDCProviderConfig configures StartOIDCProvider. Zero values take the
// defaults of hack/tools/oidc-provider/server.mjs.
type OIDCProviderConfig struct {
	ClientID, ClientSecret string
	RedirectURIs           []string // required: the relying party's callback URLs
	PostLogoutURIs         []string
	APIAudience            string              // aud of the JWT access tokens
	TokenTTL               time.Duration       // access and ID token lifetime (whole seconds)
	Groups                 map[string][]string // login -> groups claim
	SigningJWK             string              // private RSA JWK (NewSigningJWK); empty: a fresh key
	// Port to listen on (0: a free one) and Issuer to announce (empty:
	// http://127.0.0.1:Port). An Issuer on another port puts a proxy such as
	// a SlowPeer between the relying party and the provider.
	Port   int
	Issuer string
}

// NewSigningJWK returns a new private RSA signing key as a JWK (JSON), for
// providers that must share a key (OIDCProviderConfig.SigningJWK).
func NewSigningJWK(t testing.TB) string {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	k.Precompute()
	b64 := func(i *big.Int) string { return base64.RawURLEncoding.EncodeToString(i.Bytes()) }
	kid := make([]byte, 8)
	rand.Read(kid)
	b, err := json.Marshal(map[string]string{
		"kty": "RSA", "kid": hex.EncodeToString(kid),
		"n": b64(k.N), "e": b64(big.NewInt(int64(k.E))), "d": b64(k.D),
		"p": b64(k.Primes[0]), "q": b64(k.Primes[1]),
		"dp": b64(k.Precomputed.Dp), "dq": b64(k.Precomputed.Dq), "qi": b64(k.Precomputed.Qinv),
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// OIDCProvider is a running OpenID Provider (npm oidc-provider).
type OIDCProvider struct {
	*Process
	Issuer      string // http://127.0.0.1:port
	APIAudience string
}

// StartOIDCProvider starts the test OpenID Provider on a free loopback port
// with node, from the copy hack/install-tools.sh installed into
// .tools/oidc-provider, and waits for its discovery document.
func StartOIDCProvider(t testing.TB, cfg OIDCProviderConfig) *OIDCProvider {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node not found on PATH: install Node.js (20 or later)")
	}
	modules := filepath.Join(toolsDir(t), "oidc-provider")
	if _, err := os.Stat(filepath.Join(modules, "node_modules", "oidc-provider", "package.json")); err != nil {
		t.Fatalf("oidc-provider not installed in %s: run `make tools`", modules)
	}
	port := cfg.Port
	if port == 0 {
		port = FreePort(t)
	}
	issuer := cfg.Issuer
	if issuer == "" {
		issuer = fmt.Sprintf("http://127.0.0.1:%d", port)
	}
	if cfg.APIAudience == "" {
		cfg.APIAudience = "https://api.portcullis.test"
	}
	p := NewProcess(t, fmt.Sprintf("oidc-provider-%d", port), node,
		filepath.Join(RepoRoot(t), "hack", "tools", "oidc-provider", "server.mjs"))
	p.Env = []string{
		"OIDC_PORT=" + strconv.Itoa(port),
		"OIDC_ISSUER=" + issuer,
		"OIDC_MODULES=" + modules,
		"OIDC_REDIRECT_URIS=" + strings.Join(cfg.RedirectURIs, ","),
		"OIDC_POST_LOGOUT_URIS=" + strings.Join(cfg.PostLogoutURIs, ","),
		"OIDC_API_AUDIENCE=" + cfg.APIAudience,
	}
	if cfg.ClientID != "" {
		p.Env = append(p.Env, "OIDC_CLIENT_ID="+cfg.ClientID)
	}
	if cfg.ClientSecret != "" {
		p.Env = append(p.Env, "OIDC_CLIENT_SECRET="+cfg.ClientSecret)
	}
	if cfg.TokenTTL > 0 {
		p.Env = append(p.Env, "OIDC_TOKEN_TTL="+strconv.Itoa(int(cfg.TokenTTL.Seconds())))
	}
	if cfg.SigningJWK != "" {
		p.Env = append(p.Env, "OIDC_SIGNING_JWK="+cfg.SigningJWK)
	}
	if cfg.Groups != nil {
		b, err := json.Marshal(cfg.Groups)
		if err != nil {
			t.Fatal(err)
		}
		p.Env = append(p.Env, "OIDC_GROUPS="+string(b))
	}
	p.Start()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := WaitHTTP(ctx, fmt.Sprintf("http://127.0.0.1:%d/.well-known/openid-configuration", port), 200); err != nil {
		t.Fatalf("oidc-provider at %s: %v", issuer, err)
	}
	return &OIDCProvider{Process: p, Issuer: issuer, APIAudience: cfg.APIAudience}
}

// toolsDir is $PORTCULLIS_TOOLS or <repo>/.tools.
func toolsDir(t testing.TB) string {
	if dir := os.Getenv("PORTCULLIS_TOOLS"); dir != "" {
		return dir
	}
	return filepath.Join(RepoRoot(t), ".tools")
}

// ClientCredentialsToken gets a JWT access token for the API audience with
// the client_credentials grant.
func (op *OIDCProvider) ClientCredentialsToken(t testing.TB, clientID, secret string) string {
	t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}, "scope": {"api"}}
	req, err := http.NewRequest(http.MethodPost, op.Issuer+"/token", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(clientID, secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.Unmarshal(body, &tok); err != nil || strings.Count(tok.AccessToken, ".") != 2 {
		t.Fatalf("client_credentials at %s: status %d: %s", op.Issuer, resp.StatusCode, body)
	}
	return tok.AccessToken
}

// Login signs in at the provider as a browser would: from authorizeURL it
// follows redirects and submits the login form (as login, any password)
// and the consent form with client, which must keep cookies and not follow
// redirects. It returns the first redirect that leaves the provider: the
// relying party's callback URL with code and state.
func (op *OIDCProvider) Login(t testing.TB, client *http.Client, authorizeURL, login string) *url.URL {
	t.Helper()
	next, err := url.Parse(authorizeURL)
	if err != nil {
		t.Fatal(err)
	}
	var resp *http.Response
	var body string
	get := func(u *url.URL) {
		resp, body, err = fetch(client, u.String())
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
	}
	get(next)
	for range 20 {
		switch {
		case resp.StatusCode >= 300 && resp.StatusCode < 400:
			next, err = resp.Request.URL.Parse(resp.Header.Get("Location"))
			if err != nil {
				t.Fatalf("%s: bad Location: %v", resp.Request.URL, err)
			}
			if !strings.HasPrefix(next.String(), op.Issuer+"/") {
				return next
			}
			get(next)
		case resp.StatusCode == http.StatusOK:
			resp, body, err = SubmitForm(client, resp.Request.URL, body, map[string]string{"login": login, "password": "any"})
			if err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("%s: status %d: %s", resp.Request.URL, resp.StatusCode, body)
		}
	}
	t.Fatalf("sign-in at %s did not finish in 20 steps", op.Issuer)
	return nil
}

func fetch(client *http.Client, u string) (*http.Response, string, error) {
	resp, err := client.Get(u)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, string(b), err
}

// SubmitForm posts the first form of an HTML page (body, found at
// pageURL): every named input with its value, fill overriding values by
// name, and named buttons (the first value wins). It returns the response
// with its body read.
func SubmitForm(client *http.Client, pageURL *url.URL, body string, fill map[string]string) (*http.Response, string, error) {
	doc, err := html.Parse(strings.NewReader(body))
	if err != nil {
		return nil, "", err
	}
	f := &formReader{fill: fill, values: url.Values{}}
	f.walk(doc)
	action, found, values := f.action, f.found, f.values
	if !found {
		return nil, "", fmt.Errorf("no form on %s: %.300s", pageURL, body)
	}
	target, err := pageURL.Parse(action)
	if err != nil {
		return nil, "", err
	}
	resp, err := client.PostForm(target.String(), values)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, string(b), err
}

// formReader collects the action of a page's first form and the values of
// its named inputs and buttons.
type formReader struct {
	fill   map[string]string
	action string
	found  bool
	values url.Values
}

func (f *formReader) walk(n *html.Node) {
	if n.Type == html.ElementNode {
		f.element(n.Data, attributes(n))
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		f.walk(c)
	}
}

func (f *formReader) element(tag string, attr map[string]string) {
	name := attr["name"]
	switch {
	case tag == "form" && !f.found:
		f.action, f.found = attr["action"], true
	case tag == "input" && name != "":
		f.values.Set(name, attr["value"])
		if v, ok := f.fill[name]; ok {
			f.values.Set(name, v)
		}
	case tag == "button" && name != "" && f.values.Get(name) == "":
		f.values.Set(name, attr["value"])
	}
}

// attributes are n's attributes by name.
func attributes(n *html.Node) map[string]string {
	attr := make(map[string]string, len(n.Attr))
	for _, a := range n.Attr {
		attr[a.Key] = a.Val
	}
	return attr
}
