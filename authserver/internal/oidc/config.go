// Package oidc is the authserver's OpenID Connect backend: a relying party
// that signs browsers in through the Check call (authorization code flow
// with PKCE S256, state and nonce), keeps sessions in encrypted cookies
// (no server-side state, so replicas sharing a key serve the same users),
// refreshes and ends them, and validates bearer JWTs for API clients.
package oidc

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/portcullis/portcullis/authserver/internal/check"
)

// Config is the YAML file of `authserver oidc --config`. Secrets (client
// secret, cookie keys) are never written in it: each comes from a file or
// an environment variable named here.
type Config struct {
	// Issuer is the provider's issuer URL exactly as the provider writes
	// it (compared byte for byte, a trailing "/" included); discovery reads
	// <issuer>/.well-known/openid-configuration.
	Issuer string `json:"issuer"`
	// AllowInsecureIssuer accepts a plain http:// issuer. For a local test
	// provider only: over http the client secret, codes and tokens cross
	// the network readable and the discovery document can be forged.
	AllowInsecureIssuer bool `json:"allowInsecureIssuer,omitempty"`
	// ProviderCAFile is a PEM bundle trusted for the provider's TLS
	// (default: the system roots).
	ProviderCAFile string `json:"providerCAFile,omitempty"`
	// ClientID is this relying party's client at the provider.
	ClientID string `json:"clientID"`
	// ClientSecretFile or ClientSecretEnv hold the client secret. Neither:
	// a public client, protected by PKCE alone.
	ClientSecretFile string `json:"clientSecretFile,omitempty"`
	ClientSecretEnv  string `json:"clientSecretEnv,omitempty"`
	// Scopes requested at sign-in; "openid" is always added.
	// Default: openid, email, profile.
	Scopes []string `json:"scopes,omitempty"`

	// CallbackPath receives the provider's answer on every protected host:
	// the redirect URI is https://<host><CallbackPath>, and must be
	// registered at the provider. Default /oauth2/callback.
	CallbackPath string `json:"callbackPath,omitempty"`
	// RedirectURL, when set, is the one redirect URI sent to the provider
	// instead of https://<host><CallbackPath>: for a single host served on
	// a non-default port (Envoy strips the port from the host it reports).
	// Its path must be CallbackPath.
	RedirectURL string `json:"redirectURL,omitempty"`
	// LoginPath starts a sign-in and returns to its `rd` query parameter.
	// Default /oauth2/sign_in.
	LoginPath string `json:"loginPath,omitempty"`
	// LogoutPath clears the session and, when the provider has an
	// end_session_endpoint, signs out there too. Default /oauth2/sign_out.
	LogoutPath string `json:"logoutPath,omitempty"`
	// PostLogoutRedirectURL is sent to the provider as
	// post_logout_redirect_uri (it must be registered there). Without an
	// end_session_endpoint, logout redirects to it (or to `rd`, or "/").
	PostLogoutRedirectURL string `json:"postLogoutRedirectURL,omitempty"`
	// LogoutIDTokenHint sends the raw ID token to the end_session_endpoint
	// as id_token_hint. Off: logout sends client_id (and
	// post_logout_redirect_uri) instead, keeping the token out of a URL
	// (history, the provider's access log); for providers that need the
	// hint.
	LogoutIDTokenHint bool `json:"logoutIDTokenHint,omitempty"`
	// AllowedRedirectHosts are the hosts that absolute post-login and
	// post-logout redirect targets may name ("app.example.com", or
	// "*.example.com" for any subdomain). Relative paths are always allowed.
	AllowedRedirectHosts []string `json:"allowedRedirectHosts,omitempty"`

	Cookie CookieConfig `json:"cookie"`
	// Session configures what the session cookie holds.
	Session SessionConfig `json:"session,omitempty"`

	// Headers maps ID token (or bearer token) claims to headers on the
	// upstream request. Client-supplied copies are always removed.
	// Default: Auth-Subject from sub, Auth-Username from email,
	// Auth-Groups from groups.
	Headers []HeaderMapping `json:"headers,omitempty"`
	// AllowUnverifiedEmail lets a header be made from the email claim when
	// the provider says the address is not verified (email_verified:
	// false). Off: such a user is refused (403), since some providers let
	// anyone claim any address.
	AllowUnverifiedEmail bool `json:"allowUnverifiedEmail,omitempty"`
	// GroupsClaim is the claim that per-route group requirements read.
	// Default groups.
	GroupsClaim string `json:"groupsClaim,omitempty"`

	Bearer BearerConfig `json:"bearer,omitempty"`

	// JWKSRefreshInterval is how often the provider's key set is fetched
	// again, so that a key it withdrew stops verifying. Default 5m.
	JWKSRefreshInterval Duration `json:"jwksRefreshInterval,omitempty"`
}

// CookieConfig configures the session cookie.
type CookieConfig struct {
	// Name of the session cookie (chunks are Name_0, Name_1, ...; each
	// sign-in in progress has a state cookie Name_state_<hash of its
	// state>). Default __Host-portcullis_session
	// when Domain is empty and Path is "/", else portcullis_session. A
	// __Host- name requires exactly that (browsers refuse it otherwise).
	Name string `json:"name,omitempty"`
	// Domain and Path attributes. Default: no Domain (this host only), "/".
	Domain string `json:"domain,omitempty"`
	Path   string `json:"path,omitempty"`
	// SessionLifetime is how long a sign-in lasts at most, refreshes
	// included. Default 12h.
	SessionLifetime Duration `json:"sessionLifetime,omitempty"`
	// KeyFile or KeyEnv hold the 32-byte AES-256-GCM key that encrypts
	// cookies (base64 or hex). Every replica needs the same key.
	KeyFile string `json:"keyFile,omitempty"`
	KeyEnv  string `json:"keyEnv,omitempty"`
	// PreviousKeyFile or PreviousKeyEnv hold the key being rotated out:
	// cookies sealed with it are still read; new cookies use Key.
	PreviousKeyFile string `json:"previousKeyFile,omitempty"`
	PreviousKeyEnv  string `json:"previousKeyEnv,omitempty"`
}

// SessionConfig configures the content of the session cookie.
type SessionConfig struct {
	// Claims filters the ID token's claims kept in the session, to keep
	// it within the cookies browsers accept (at most maxChunks chunks).
	Claims ClaimFilter `json:"claims,omitempty"`
}

// ClaimFilter keeps only Keep, or everything but Drop, of the ID token's
// top-level claims ("sub" is always kept). Set, the session holds the
// filtered claims instead of the raw ID token, so logout sends no
// id_token_hint.
type ClaimFilter struct {
	Keep []string `json:"keep,omitempty"`
	Drop []string `json:"drop,omitempty"`
}

// active reports whether the filter changes anything.
func (f ClaimFilter) active() bool { return len(f.Keep) > 0 || len(f.Drop) > 0 }

// apply returns the claims the filter keeps.
func (f ClaimFilter) apply(claims map[string]any) map[string]any {
	out := make(map[string]any, len(claims))
	for k, v := range claims {
		if f.keeps(k) {
			out[k] = v
		}
	}
	return out
}

// keeps reports whether the filter keeps claim name. Keeping email keeps
// email_verified: without it an unverified address would pass as a
// verified one (see Server.unverifiedEmail).
func (f ClaimFilter) keeps(name string) bool {
	if name == "sub" || (name == "email_verified" && len(f.Keep) > 0 && f.keeps("email")) {
		return true
	}
	if len(f.Keep) > 0 {
		return slices.Contains(f.Keep, name)
	}
	return !slices.Contains(f.Drop, name)
}

// HeaderMapping sets upstream header Name from claim Claim (lists are
// joined with ","; a missing claim sets nothing).
type HeaderMapping struct {
	Name  string `json:"name"`
	Claim string `json:"claim"`
}

// BearerConfig enables `Authorization: Bearer <JWT>` for API clients.
type BearerConfig struct {
	// Audiences accepted in the token's aud claim; empty disables bearer
	// tokens (such requests then get 401).
	Audiences []string `json:"audiences,omitempty"`
	// Algorithms accepted for signatures. Default RS256, ES256.
	Algorithms []string `json:"algorithms,omitempty"`
	// StripAuthorization removes the Authorization header (the bearer
	// token) from requests it allowed, so the upstream never sees the
	// token. Default false: forwarded, as upstreams may check it again.
	StripAuthorization bool `json:"stripAuthorization,omitempty"`
}

// Duration is a time.Duration written as "90s", "12h".
type Duration struct{ time.Duration }

// UnmarshalJSON reads a Go duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string like \"12h\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	d.Duration = v
	return nil
}

// MarshalJSON writes a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// Settings is a validated Config with its secrets loaded.
type Settings struct {
	Config
	ClientSecret string
	Keys         [][]byte // current key first
}

// LoadConfig reads and validates the YAML file at path, and loads the
// secrets it names.
func LoadConfig(path string) (*Settings, error) {
	b, err := os.ReadFile(filepath.Clean(path))
	if err != nil {
		return nil, err
	}
	var c Config
	if err := yaml.UnmarshalStrict(b, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	s, err := c.Load()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// Load applies defaults, validates c and reads its secrets.
func (c Config) Load() (*Settings, error) {
	c.setDefaults()
	e := &configErrors{}
	for _, check := range []func(*configErrors){c.checkIssuer, c.checkPaths, c.checkRedirects, c.checkCookie, c.checkClaims, c.checkBearer} {
		check(e)
	}
	s := &Settings{Config: c}
	s.loadSecrets(e)
	if err := errors.Join(e.errs...); err != nil {
		return nil, err
	}
	return s, nil
}

// configErrors collects every problem of a configuration, so that one
// start-up reports them all.
type configErrors struct{ errs []error }

func (e *configErrors) fail(format string, args ...any) {
	e.errs = append(e.errs, fmt.Errorf(format, args...))
}

func (c *Config) checkIssuer(e *configErrors) {
	if u, err := url.Parse(c.Issuer); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		e.fail("issuer %q is not an http(s) URL", c.Issuer)
	} else if u.Scheme == "http" && !c.AllowInsecureIssuer {
		// Fail closed: over http anyone on the path reads the client secret,
		// codes and tokens, and can forge discovery and the signing keys.
		e.fail("issuer %q is plain http: the client secret, codes and tokens would cross the network unprotected; use https, or set allowInsecureIssuer: true for a local test provider", c.Issuer)
	}
	if c.ClientID == "" {
		e.fail("clientID is required")
	}
	if c.JWKSRefreshInterval.Duration < minRefetchInterval {
		e.fail("jwksRefreshInterval must be at least %v", minRefetchInterval)
	}
}

func (c *Config) checkPaths(e *configErrors) {
	for name, p := range map[string]string{"callbackPath": c.CallbackPath, "loginPath": c.LoginPath, "logoutPath": c.LogoutPath} {
		if !strings.HasPrefix(p, "/") || strings.ContainsAny(p, "?# ") {
			e.fail("%s %q must be an absolute path without query", name, p)
		}
	}
	if c.CallbackPath == c.LoginPath || c.CallbackPath == c.LogoutPath || c.LoginPath == c.LogoutPath {
		e.fail("callbackPath, loginPath and logoutPath must differ")
	}
}

func (c *Config) checkRedirects(e *configErrors) {
	for _, h := range c.AllowedRedirectHosts {
		if h == "" || strings.ContainsAny(h, "/@:\\ ") {
			e.fail("allowedRedirectHosts: %q is not a host name", h)
		}
	}
	if c.RedirectURL != "" {
		if u, err := url.Parse(c.RedirectURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Path != c.CallbackPath {
			e.fail("redirectURL %q must be an absolute http(s) URL whose path is callbackPath %s", c.RedirectURL, c.CallbackPath)
		}
	}
	if c.PostLogoutRedirectURL != "" {
		if u, err := url.Parse(c.PostLogoutRedirectURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			e.fail("postLogoutRedirectURL %q is not an absolute http(s) URL", c.PostLogoutRedirectURL)
		}
	}
}

func (c *Config) checkCookie(e *configErrors) {
	if !check.ValidHeaderName(c.Cookie.Name) || strings.ContainsAny(c.Cookie.Name, "=;,") {
		e.fail("cookie.name %q is not a valid cookie name", c.Cookie.Name)
	}
	if hasPrefixFold(c.Cookie.Name, hostPrefix) && (c.Cookie.Domain != "" || c.Cookie.Path != "/") {
		e.fail("cookie.name %q: a %s cookie needs no cookie.domain and cookie.path \"/\" (browsers drop it otherwise)", c.Cookie.Name, hostPrefix)
	}
	if c.Cookie.SessionLifetime.Duration <= 0 {
		e.fail("cookie.sessionLifetime must be positive")
	}
}

func (c *Config) checkClaims(e *configErrors) {
	for _, h := range c.Headers {
		if !check.ValidHeaderName(h.Name) || h.Claim == "" {
			e.fail("headers: name %q claim %q: need a valid header name and a claim", h.Name, h.Claim)
		}
	}
	cf := c.Session.Claims
	if len(cf.Keep) > 0 && len(cf.Drop) > 0 {
		e.fail("session.claims: set keep or drop, not both")
	}
	for _, n := range append(slices.Clone(cf.Keep), cf.Drop...) {
		if n == "" || strings.TrimSpace(n) != n {
			e.fail("session.claims: %q is not a claim name", n)
		}
	}
	if slices.Contains(cf.Drop, "sub") {
		e.fail("session.claims.drop: sub identifies the user and is always kept")
	}
	if slices.Contains(cf.Drop, "email_verified") && cf.keeps("email") && !c.AllowUnverifiedEmail {
		e.fail("session.claims.drop: email_verified is needed while email is kept (an unverified address would pass as verified); drop email too, or set allowUnverifiedEmail: true")
	}
}

func (c *Config) checkBearer(e *configErrors) {
	for _, a := range c.Bearer.Algorithms {
		if !allowedAlgorithms[a] {
			e.fail("bearer.algorithms: %q is not an asymmetric JWS algorithm", a)
		}
	}
}

// loadSecrets reads the client secret and the cookie keys.
func (s *Settings) loadSecrets(e *configErrors) {
	var err error
	if s.ClientSecret, err = secret("clientSecret", s.ClientSecretFile, s.ClientSecretEnv, false); err != nil {
		e.errs = append(e.errs, err)
	}
	for i, src := range [][2]string{{s.Cookie.KeyFile, s.Cookie.KeyEnv}, {s.Cookie.PreviousKeyFile, s.Cookie.PreviousKeyEnv}} {
		name := []string{"cookie.key", "cookie.previousKey"}[i]
		raw, err := secret(name, src[0], src[1], i == 0)
		if err != nil {
			e.errs = append(e.errs, err)
			continue
		}
		if raw == "" {
			continue
		}
		key, err := decodeKey(raw)
		if err != nil {
			e.fail("%s: %v", name, err)
			continue
		}
		s.Keys = append(s.Keys, key)
	}
}

func (c *Config) setDefaults() {
	if len(c.Scopes) == 0 {
		c.Scopes = []string{"openid", "email", "profile"}
	}
	hasOpenID := false
	for _, s := range c.Scopes {
		hasOpenID = hasOpenID || s == "openid"
	}
	if !hasOpenID {
		c.Scopes = append([]string{"openid"}, c.Scopes...)
	}
	def := func(p *string, v string) {
		if *p == "" {
			*p = v
		}
	}
	def(&c.CallbackPath, "/oauth2/callback")
	def(&c.LoginPath, "/oauth2/sign_in")
	def(&c.LogoutPath, "/oauth2/sign_out")
	def(&c.Cookie.Path, "/")
	if c.Cookie.Name == "" {
		c.Cookie.Name = defaultCookieName
		// A __Host- cookie is accepted by browsers only from this very host,
		// Secure, without Domain and on "/": a sibling subdomain cannot plant
		// a state or session cookie of that name (login CSRF).
		if c.Cookie.Domain == "" && c.Cookie.Path == "/" {
			c.Cookie.Name = hostPrefix + defaultCookieName
		}
	}
	def(&c.GroupsClaim, "groups")
	if c.Cookie.SessionLifetime.Duration == 0 {
		c.Cookie.SessionLifetime.Duration = 12 * time.Hour
	}
	if c.JWKSRefreshInterval.Duration == 0 {
		c.JWKSRefreshInterval.Duration = 5 * time.Minute
	}
	if len(c.Headers) == 0 {
		c.Headers = []HeaderMapping{{"Auth-Subject", "sub"}, {"Auth-Username", "email"}, {"Auth-Groups", "groups"}}
	}
	if len(c.Bearer.Algorithms) == 0 {
		c.Bearer.Algorithms = []string{"RS256", "ES256"}
	}
}

const (
	defaultCookieName = "portcullis_session"
	hostPrefix        = "__Host-"
)

// hasPrefixFold is strings.HasPrefix ignoring ASCII case: browsers match
// cookie prefixes that way.
func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// allowedAlgorithms are the JWS algorithms a provider signs with; "none"
// and the HMAC family (which would make the client secret a signing key)
// are refused.
var allowedAlgorithms = map[string]bool{
	"RS256": true, "RS384": true, "RS512": true,
	"ES256": true, "ES384": true, "ES512": true,
	"PS256": true, "PS384": true, "PS512": true, "EdDSA": true,
}

// secret reads a secret from a file or an environment variable (exactly
// one of them when required).
func secret(name, file, env string, required bool) (string, error) {
	switch {
	case file != "" && env != "":
		return "", fmt.Errorf("%s: set %sFile or %sEnv, not both", name, name, name)
	case file != "":
		b, err := os.ReadFile(filepath.Clean(file))
		if err != nil {
			return "", fmt.Errorf("%s: %w", name, err)
		}
		v := strings.TrimSpace(string(b))
		if v == "" {
			return "", fmt.Errorf("%s: file %s is empty", name, file)
		}
		return v, nil
	case env != "":
		v := strings.TrimSpace(os.Getenv(env))
		if v == "" {
			return "", fmt.Errorf("%s: environment variable %s is empty or unset", name, env)
		}
		return v, nil
	case required:
		return "", fmt.Errorf("%s: set %sFile or %sEnv", name, name, name)
	}
	return "", nil
}

// decodeKey accepts 32 bytes as base64 (standard or URL, padded or not) or
// hex.
func decodeKey(s string) ([]byte, error) {
	for _, dec := range []func(string) ([]byte, error){
		hex.DecodeString,
		base64.StdEncoding.DecodeString, base64.RawStdEncoding.DecodeString,
		base64.URLEncoding.DecodeString, base64.RawURLEncoding.DecodeString,
	} {
		if b, err := dec(s); err == nil && len(b) == 32 {
			return b, nil
		}
	}
	return nil, errors.New("want 32 bytes, base64 or hex encoded (e.g. `openssl rand -base64 32`)")
}
