package harness

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// DexPassword is every DexUser's password; dexPasswordHash is its bcrypt
// hash, at cost 10, the least Dex accepts.
const (
	DexPassword     = "e2e-dex-password"
	dexPasswordHash = "$2a$10$HhOKmNSsJKEkKip8w.0x0eFRlJ6H8umEwj/GRfFJs/QBbNtNNqVUm"
)

// DexConfig configures StartDex: Dex's static configuration, with its
// memory storage, its password database and the password grant.
type DexConfig struct {
	CA         *CA           // issues Dex's serving certificate (required)
	Path       string        // the issuer's path; default /dex
	IDTokenTTL time.Duration // expiry.idTokens (access tokens too); default 24h
	// KeysRotation is how often Dex replaces its signing key (checked
	// every 30 s); default 6h.
	KeysRotation time.Duration
	Clients      []DexClient
	Users        []DexUser
}

// DexClient is one of staticClients.
type DexClient struct {
	ID, Secret   string
	RedirectURIs []string
}

// DexUser is one of staticPasswords (password DexPassword).
type DexUser struct {
	Username, Email string
	Unverified      bool // emailVerified: false
	Groups          []string
}

// Dex is a running Dex, serving HTTPS on 127.0.0.1.
type Dex struct {
	*Process
	Issuer string // https://127.0.0.1:port/dex
	client *http.Client
}

// StartDex starts the Dex that hack/install-tools.sh built into
// .tools/bin on a free loopback port and waits for its discovery document.
func StartDex(t testing.TB, cfg DexConfig) *Dex {
	t.Helper()
	bin := Tool(t, "dex")
	if cfg.Path == "" {
		cfg.Path = "/dex"
	}
	addr := FreeAddr(t)
	issuer := "https://" + addr + cfg.Path
	certFile, keyFile := cfg.CA.Issue(t, "127.0.0.1", "localhost").WriteFiles(t)
	conf := filepath.Join(t.TempDir(), "dex.json")
	b, err := json.MarshalIndent(dexConfigDoc(cfg, issuer, addr, certFile, keyFile), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, conf, b)
	p := NewProcess(t, "dex-"+strings.ReplaceAll(addr, ":", "-"), bin, "serve", conf)
	p.Start()
	d := &Dex{Process: p, Issuer: issuer, client: dexHTTPClient(cfg.CA.CertPEM)}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := WaitHTTPWith(ctx, d.client, issuer+"/.well-known/openid-configuration", http.StatusOK); err != nil {
		t.Fatalf("dex at %s: %v", issuer, err)
	}
	return d
}

// dexConfigDoc is Dex's configuration file (JSON, which Dex reads as YAML).
func dexConfigDoc(cfg DexConfig, issuer, addr, certFile, keyFile string) map[string]any {
	ttl, rotation := cfg.IDTokenTTL, cfg.KeysRotation
	if ttl == 0 {
		ttl = 24 * time.Hour
	}
	if rotation == 0 {
		rotation = 6 * time.Hour
	}
	var clients, users []map[string]any
	for _, c := range cfg.Clients {
		clients = append(clients, map[string]any{"id": c.ID, "secret": c.Secret, "name": c.ID, "redirectURIs": c.RedirectURIs})
	}
	for i, u := range cfg.Users {
		users = append(users, map[string]any{
			"username": u.Username, "email": u.Email, "emailVerified": !u.Unverified, "groups": u.Groups,
			"userID": fmt.Sprintf("user-%d-%s", i, u.Username), "hash": dexPasswordHash,
		})
	}
	return map[string]any{
		"issuer":  issuer,
		"storage": map[string]any{"type": "memory"},
		"web":     map[string]any{"https": addr, "tlsCert": certFile, "tlsKey": keyFile},
		"logger":  map[string]any{"level": "info"},
		"expiry":  map[string]any{"idTokens": ttl.String()},
		"signer": map[string]any{"type": "local",
			"config": map[string]any{"keysRotationPeriod": rotation.String()}},
		// The password grant gives tests tokens without a browser.
		"oauth2":           map[string]any{"passwordConnector": "local"},
		"enablePasswordDB": true,
		"staticClients":    clients,
		"staticPasswords":  users,
	}
}

// dexHTTPClient trusts only caPEM, as the tests' clients of Dex do.
func dexHTTPClient(caPEM []byte) *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
	}}
}

// DexTokens is a token endpoint's answer.
type DexTokens struct {
	AccessToken  string `json:"access_token"`
	IDToken      string `json:"id_token"`
	RefreshToken string `json:"refresh_token"`
}

// Token posts form to the token endpoint as clientID (basic
// authentication) and fails the test unless it answers tokens.
func (d *Dex) Token(t testing.TB, clientID, secret string, form url.Values) *DexTokens {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, d.Issuer+"/token", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(clientID), url.QueryEscape(secret))
	resp, err := d.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var tok DexTokens
	if err := json.Unmarshal(body, &tok); err != nil || resp.StatusCode != http.StatusOK || tok.IDToken == "" {
		t.Fatalf("dex token endpoint (%s): status %d: %s", form.Get("grant_type"), resp.StatusCode, body)
	}
	return &tok
}

// PasswordToken signs a user in with the password grant (no nonce).
// Dex's password database knows users by email.
func (d *Dex) PasswordToken(t testing.TB, clientID, secret, email string) *DexTokens {
	t.Helper()
	return d.Token(t, clientID, secret, url.Values{
		"grant_type": {"password"}, "username": {email}, "password": {DexPassword},
		"scope": {"openid email profile groups"},
	})
}

// KeyIDs lists the kids of Dex's JWKS: the signing key first, then the
// keys kept to verify what the earlier ones signed.
func (d *Dex) KeyIDs(t testing.TB) []string {
	t.Helper()
	resp, err := d.client.Get(d.Issuer + "/keys")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var jwks struct {
		Keys []struct {
			Kid string `json:"kid"`
		} `json:"keys"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&jwks); err != nil {
		t.Fatalf("dex keys: %v", err)
	}
	var kids []string
	for _, k := range jwks.Keys {
		kids = append(kids, k.Kid)
	}
	return kids
}

// Login signs a user (by email) in at Dex as a browser would, from authorizeURL:
// it follows redirects, fills Dex's login form with DexPassword and
// grants access on its approval page, with client, which must keep
// cookies, not follow redirects and trust Dex's CA. It returns the first
// redirect that leaves Dex (the relying party's callback URL).
func (d *Dex) Login(t testing.TB, client *http.Client, authorizeURL, email string) *url.URL {
	t.Helper()
	resp, body, err := fetch(client, authorizeURL)
	for step := 0; step < 20; step++ {
		if err != nil {
			t.Fatalf("dex sign-in: %v", err)
		}
		switch {
		case resp.StatusCode >= 300 && resp.StatusCode < 400:
			next, perr := resp.Request.URL.Parse(resp.Header.Get("Location"))
			if perr != nil {
				t.Fatalf("%s: bad Location: %v", resp.Request.URL, perr)
			}
			if !strings.HasPrefix(next.String(), d.Issuer+"/") {
				return next
			}
			resp, body, err = fetch(client, next.String())
		case resp.StatusCode == http.StatusOK:
			// The login form, then the approval page. SubmitForm reads the
			// inputs of every form: the page's second (Cancel) would
			// set approval=rejected.
			resp, body, err = SubmitForm(client, resp.Request.URL, body,
				map[string]string{"login": email, "password": DexPassword, "approval": "approve"})
		default:
			t.Fatalf("dex sign-in: %s: status %d: %.500s", resp.Request.URL, resp.StatusCode, body)
		}
	}
	t.Fatalf("sign-in at %s did not finish in 20 steps", d.Issuer)
	return nil
}

// Discovery is Dex's /.well-known/openid-configuration.
func (d *Dex) Discovery(t testing.TB) map[string]any {
	t.Helper()
	resp, err := d.client.Get(d.Issuer + "/.well-known/openid-configuration")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatalf("dex discovery: %v", err)
	}
	return doc
}
