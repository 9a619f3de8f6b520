package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
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
	port := FreePort(t)
	issuer := fmt.Sprintf("http://127.0.0.1:%d", port)
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
	if err := WaitHTTP(ctx, issuer+"/.well-known/openid-configuration", 200); err != nil {
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
