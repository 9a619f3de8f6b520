package harness

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// keycloakVersion is the Keycloak hack/install-tools.sh installs
// (KEYCLOAK_VERSION there) into .tools/keycloak-<version>.
const keycloakVersion = "26.5.6"

// keycloakStartTimeout bounds Keycloak's start: about 30 s on two busy
// cores, most of it the JVM and Quarkus.
const keycloakStartTimeout = 3 * time.Minute

// KeycloakConfig configures StartKeycloak.
type KeycloakConfig struct {
	// CA issues Keycloak's certificate (for 127.0.0.1); nil: a new CA.
	// Pass the stack's CA to have one trust anchor for both.
	CA *CA
}

// Keycloak is a running Keycloak: HTTPS on a free 127.0.0.1 port with a
// certificate of CA, an in-memory database (each run starts empty), and
// a bootstrap admin service account in the master realm for the admin
// REST API.
type Keycloak struct {
	*Process
	URL    string       // https://127.0.0.1:<port>: a realm's issuer is URL/realms/<name>
	CA     *CA          // issued Keycloak's certificate
	Client *http.Client // trusts CA alone, does not follow redirects

	adminClient          *http.Client // Client with time for a big import
	adminID, adminSecret string
	mu                   sync.Mutex
	token                string // admin access token, until expires
	expires              time.Time
}

// StartKeycloak starts Keycloak and waits until it serves.
func StartKeycloak(t testing.TB, cfg KeycloakConfig) *Keycloak {
	t.Helper()
	k := LaunchKeycloak(t, cfg)
	k.WaitReady(t)
	return k
}

// LaunchKeycloak starts Keycloak without waiting for it (WaitReady), so
// a test can start the rest of its stack meanwhile.
func LaunchKeycloak(t testing.TB, cfg KeycloakConfig) *Keycloak {
	t.Helper()
	home := keycloakHome(t)
	if _, err := exec.LookPath("java"); err != nil {
		t.Fatalf("java not found on PATH (Keycloak needs Java 17 or later): run `make tools`")
	}
	if cfg.CA == nil {
		cfg.CA = NewCA(t, "portcullis-keycloak-e2e")
	}
	certFile, keyFile := cfg.CA.Issue(t, "127.0.0.1").WriteFiles(t)
	port := FreePort(t)
	k := &Keycloak{URL: fmt.Sprintf("https://127.0.0.1:%d", port), CA: cfg.CA,
		Client: caClient(cfg.CA.CertPEM, 30*time.Second), adminClient: caClient(cfg.CA.CertPEM, 3*time.Minute), adminID: "portcullis-e2e-admin", adminSecret: randomHex(16)}
	// Built by install-tools.sh (kc.sh build --db=dev-mem); runtime
	// options only. Loopback only, HTTPS only; the hostname pins the
	// issuer whatever the request's Host.
	k.Process = NewProcess(t, fmt.Sprintf("keycloak-%d", port), filepath.Join(home, "bin", "kc.sh"),
		"start", "--optimized", "--cache=local", "--http-enabled=false",
		"--http-host=127.0.0.1", fmt.Sprintf("--https-port=%d", port),
		"--https-certificate-file="+certFile, "--https-certificate-key-file="+keyFile,
		"--hostname="+k.URL, "--hostname-strict=true")
	k.Env = []string{
		"KC_BOOTSTRAP_ADMIN_CLIENT_ID=" + k.adminID,
		"KC_BOOTSTRAP_ADMIN_CLIENT_SECRET=" + k.adminSecret,
		// kc.sh's default heap is a share of the machine's memory.
		"JAVA_OPTS_KC_HEAP=-Xms128m -Xmx768m",
	}
	k.Start()
	return k
}

// keycloakHome is the installed Keycloak, failing the test without one.
func keycloakHome(t testing.TB) string {
	t.Helper()
	home := filepath.Join(toolsDir(t), "keycloak-"+keycloakVersion)
	if _, err := os.Stat(filepath.Join(home, "bin", "kc.sh")); err != nil {
		t.Fatalf("Keycloak %s not installed in %s: run `make tools`", keycloakVersion, home)
	}
	return home
}

// WaitReady waits until the master realm's discovery document is served,
// failing the test at once if Keycloak exits.
func (k *Keycloak) WaitReady(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), keycloakStartTimeout)
	defer cancel()
	done := k.Done()
	err := poll(ctx, func() error {
		select {
		case <-done:
			return permanentError{fmt.Errorf("exited: %v", exitString(k.ExitErr()))}
		default:
		}
		return GetStatus(ctx, k.Client, k.Issuer("master")+"/.well-known/openid-configuration", http.StatusOK)
	})
	if err != nil {
		t.Fatalf("Keycloak at %s: %v", k.URL, err)
	}
}

// Issuer is the issuer of realm.
func (k *Keycloak) Issuer(realm string) string { return k.URL + "/realms/" + realm }

func caClient(caPEM []byte, timeout time.Duration) *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	return &http.Client{
		Timeout:       timeout,
		Transport:     &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// adminToken is an access token of the bootstrap admin service account,
// fetched again shortly before it expires (the master realm's tokens
// last a minute).
func (k *Keycloak) adminToken(ctx context.Context) (string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.token != "" && time.Until(k.expires) > 15*time.Second {
		return k.token, nil
	}
	tok, err := k.RequestToken(ctx, "master", url.Values{"grant_type": {"client_credentials"}}, k.adminID, k.adminSecret)
	if err != nil {
		return "", fmt.Errorf("admin token: %w", err)
	}
	k.token, k.expires = tok.AccessToken, time.Now().Add(time.Duration(tok.ExpiresIn)*time.Second)
	return k.token, nil
}

// Admin sends an admin REST API request: path is under /admin/realms
// ("" for the realms themselves), body (if not nil) is sent as JSON, a
// JSON answer is decoded into out (if not nil). It fails the test unless
// the status is 2xx and returns the answer's Location header, where
// Keycloak names what a POST created.
func (k *Keycloak) Admin(t testing.TB, method, p string, body, out any) string {
	t.Helper()
	loc, err := k.admin(context.Background(), method, p, body, out)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func (k *Keycloak) admin(ctx context.Context, method, p string, body, out any) (string, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return "", err
		}
		r = bytes.NewReader(b)
	}
	token, err := k.adminToken(ctx)
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, method, k.URL+path.Join("/admin/realms", p), r)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := k.adminClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", method, p, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return "", fmt.Errorf("%s %s: status %d: %.500s", method, p, resp.StatusCode, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return "", fmt.Errorf("%s %s: %w: %.200s", method, p, err, b)
		}
	}
	return resp.Header.Get("Location"), nil
}

// TokenResponse is a token endpoint's answer.
type TokenResponse struct {
	AccessToken  string `json:"access_token"`
	IDToken      string `json:"id_token"`
	RefreshToken string `json:"refresh_token"`
	ExpiresIn    int    `json:"expires_in"`
}

// Token posts form to realm's token endpoint as clientID (with secret
// when not empty) and fails the test unless it gets an access token.
func (k *Keycloak) Token(t testing.TB, realm string, form url.Values, clientID, secret string) *TokenResponse {
	t.Helper()
	tok, err := k.RequestToken(context.Background(), realm, form, clientID, secret)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// RequestToken is Token returning its error (for the background).
func (k *Keycloak) RequestToken(ctx context.Context, realm string, form url.Values, clientID, secret string) (*TokenResponse, error) {
	form.Set("client_id", clientID)
	if secret != "" {
		form.Set("client_secret", secret)
	}
	endpoint := k.Issuer(realm) + "/protocol/openid-connect/token"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := k.Client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var tok TokenResponse
	if err := json.Unmarshal(b, &tok); err != nil || resp.StatusCode != http.StatusOK || tok.AccessToken == "" {
		return nil, fmt.Errorf("token endpoint of realm %s (%s): status %d: %.300s", realm, form.Get("grant_type"), resp.StatusCode, b)
	}
	return &tok, nil
}

// ClientCredentials is a service account's access token (the
// client_credentials grant).
func (k *Keycloak) ClientCredentials(t testing.TB, realm, clientID, secret string) string {
	t.Helper()
	return k.Token(t, realm, url.Values{"grant_type": {"client_credentials"}}, clientID, secret).AccessToken
}

// PasswordToken is a user's tokens by the password grant (a client with
// direct access grants on).
func (k *Keycloak) PasswordToken(t testing.TB, realm, clientID, username, password string) *TokenResponse {
	t.Helper()
	form := url.Values{"grant_type": {"password"}, "username": {username}, "password": {password}, "scope": {"openid"}}
	return k.Token(t, realm, form, clientID, "")
}

// KeycloakRealm is a realm to create: its clients, users and groups.
type KeycloakRealm struct {
	Name string
	// AccessTokenLifespan is the realm's access (and ID) token lifetime,
	// whole seconds; 0: Keycloak's default (5 minutes).
	AccessTokenLifespan time.Duration
	Clients             []KeycloakClient
	Users               []KeycloakUser
	// Groups are created besides those the users name: for users added
	// later (AddUsers).
	Groups []string
	// GroupsScope adds a default client scope "groups" to every client:
	// a Group Membership mapper, claim "groups", group names (not full
	// paths), in the ID token, access token and userinfo.
	GroupsScope bool
}

// KeycloakClient is an OpenID Connect client of a realm.
type KeycloakClient struct {
	ClientID string
	Secret   string // empty: a public client
	// RedirectURIs enable the authorization code flow (standard flow).
	RedirectURIs, PostLogoutRedirectURIs []string
	ServiceAccount                       bool // the client_credentials grant
	DirectAccessGrants                   bool // the password grant
	// Audience adds an Audience mapper: this client ID in the access
	// token's aud (Keycloak puts only "account", or nothing, there).
	Audience string
	// AccessTokenLifespan overrides the realm's for this client.
	AccessTokenLifespan time.Duration
}

// KeycloakUser is a user with a password; every group it names is
// created.
type KeycloakUser struct {
	Username, Password, Email string
	EmailVerified             bool
	Groups                    []string
}

// CreateRealm creates the realm with one admin API call (a realm
// representation holding its groups, users and clients), then the groups
// client scope. Keycloak joins a user to each group in a time that grows
// with the groups it is in: a user in 1,000 groups takes it 10 to 30 s,
// which AddUsers can spend in the background. (Creating the groups costs
// a second here, 20 s in a partial import.)
func (k *Keycloak) CreateRealm(t testing.TB, r KeycloakRealm) {
	t.Helper()
	rep := map[string]any{
		"realm": r.Name, "enabled": true,
		"groups": realmGroups(r.Users, r.Groups), "users": realmUsers(r.Users), "clients": realmClients(r.Clients),
	}
	if r.AccessTokenLifespan > 0 {
		rep["accessTokenLifespan"] = int(r.AccessTokenLifespan.Seconds())
	}
	k.Admin(t, http.MethodPost, "", rep, nil)
	if r.GroupsScope {
		k.addGroupsScope(t, r)
	}
}

// AddUsers adds users to an existing realm, in groups it has, with one
// admin API call (a partial import). It returns its error instead of
// failing a test, so that it can run in the background.
func (k *Keycloak) AddUsers(ctx context.Context, realm string, users ...KeycloakUser) error {
	_, err := k.admin(ctx, http.MethodPost, realm+"/partialImport", map[string]any{
		"ifResourceExists": "FAIL", "users": realmUsers(users),
	}, nil)
	return err
}

// realmGroups are the groups the users name and the others, each once.
func realmGroups(users []KeycloakUser, others []string) []map[string]any {
	names := slices.Clone(others)
	for _, u := range users {
		names = append(names, u.Groups...)
	}
	seen := map[string]bool{}
	var groups []map[string]any
	for _, g := range names {
		if !seen[g] {
			seen[g] = true
			groups = append(groups, map[string]any{"name": g, "path": "/" + g})
		}
	}
	return groups
}

func realmUsers(users []KeycloakUser) []map[string]any {
	var reps []map[string]any
	for _, u := range users {
		paths := make([]string, len(u.Groups))
		for i, g := range u.Groups {
			paths[i] = "/" + g
		}
		// First and last name too: Keycloak's user profile requires them,
		// or the first sign-in stops at an "update your account" form.
		reps = append(reps, map[string]any{
			"username": u.Username, "enabled": true, "email": u.Email, "emailVerified": u.EmailVerified,
			"firstName": u.Username, "lastName": "Test", "groups": paths,
			"credentials": []map[string]any{{"type": "password", "value": u.Password, "temporary": false}},
		})
	}
	return reps
}

func realmClients(clients []KeycloakClient) []map[string]any {
	var reps []map[string]any
	for _, c := range clients {
		attrs := map[string]string{"pkce.code.challenge.method": "S256"}
		if len(c.PostLogoutRedirectURIs) > 0 {
			attrs["post.logout.redirect.uris"] = strings.Join(c.PostLogoutRedirectURIs, "##")
		}
		if c.AccessTokenLifespan > 0 {
			attrs["access.token.lifespan"] = fmt.Sprint(int(c.AccessTokenLifespan.Seconds()))
		}
		rep := map[string]any{
			"clientId": c.ClientID, "enabled": true, "protocol": "openid-connect",
			"publicClient": c.Secret == "", "secret": c.Secret,
			"standardFlowEnabled": len(c.RedirectURIs) > 0, "redirectUris": c.RedirectURIs,
			"serviceAccountsEnabled": c.ServiceAccount, "directAccessGrantsEnabled": c.DirectAccessGrants,
			"implicitFlowEnabled": false, "attributes": attrs,
		}
		if c.Audience != "" {
			rep["protocolMappers"] = []map[string]any{{
				"name": "audience", "protocol": "openid-connect", "protocolMapper": "oidc-audience-mapper",
				"config": map[string]string{"included.client.audience": c.Audience,
					"access.token.claim": "true", "id.token.claim": "false", "introspection.token.claim": "true"},
			}}
		}
		reps = append(reps, rep)
	}
	return reps
}

// CreateClient adds a client to an existing realm (master included).
func (k *Keycloak) CreateClient(t testing.TB, realm string, c KeycloakClient) {
	t.Helper()
	k.Admin(t, http.MethodPost, realm+"/clients", realmClients([]KeycloakClient{c})[0], nil)
}

// addGroupsScope creates the client scope "groups" (a realm
// representation naming client scopes would replace Keycloak's built-in
// ones) and makes it a default scope of every client.
func (k *Keycloak) addGroupsScope(t testing.TB, r KeycloakRealm) {
	t.Helper()
	loc := k.Admin(t, http.MethodPost, r.Name+"/client-scopes", map[string]any{
		"name": "groups", "protocol": "openid-connect",
		"attributes": map[string]string{"include.in.token.scope": "true"},
		"protocolMappers": []map[string]any{{
			"name": "groups", "protocol": "openid-connect", "protocolMapper": "oidc-group-membership-mapper",
			"config": map[string]string{"claim.name": "groups", "full.path": "false",
				"id.token.claim": "true", "access.token.claim": "true", "userinfo.token.claim": "true"},
		}},
	}, nil)
	scope := path.Base(loc)
	for _, c := range r.Clients {
		k.Admin(t, http.MethodPut, r.Name+"/clients/"+k.ClientUUID(t, r.Name, c.ClientID)+"/default-client-scopes/"+scope, nil, nil)
	}
}

// ClientUUID is the internal id of realm's client clientID.
func (k *Keycloak) ClientUUID(t testing.TB, realm, clientID string) string {
	t.Helper()
	var clients []struct{ ID string }
	k.Admin(t, http.MethodGet, realm+"/clients?clientId="+url.QueryEscape(clientID), nil, &clients)
	if len(clients) != 1 {
		t.Fatalf("realm %s: %d clients %q", realm, len(clients), clientID)
	}
	return clients[0].ID
}

// UserID is the id of realm's user username: the sub of its tokens.
func (k *Keycloak) UserID(t testing.TB, realm, username string) string {
	t.Helper()
	var users []struct{ ID string }
	k.Admin(t, http.MethodGet, realm+"/users?exact=true&username="+url.QueryEscape(username), nil, &users)
	if len(users) != 1 {
		t.Fatalf("realm %s: %d users %q", realm, len(users), username)
	}
	return users[0].ID
}

// ServiceAccountID is the id of the service account user of realm's
// client clientID: the sub of its client_credentials tokens.
func (k *Keycloak) ServiceAccountID(t testing.TB, realm, clientID string) string {
	t.Helper()
	var user struct{ ID string }
	k.Admin(t, http.MethodGet, realm+"/clients/"+k.ClientUUID(t, realm, clientID)+"/service-account-user", nil, &user)
	return user.ID
}

// AddRSAKey adds an RS256 signing key provider to realm at priority
// (the highest active one signs new tokens; Keycloak's own is at 100):
// privateKeyPEM (PKCS#1 or PKCS#8) is imported, or with nil a key is
// generated. It returns the provider's component id and the key's kid.
func (k *Keycloak) AddRSAKey(t testing.TB, realm string, priority int, privateKeyPEM []byte) (component, kid string) {
	t.Helper()
	var r struct{ ID string }
	k.Admin(t, http.MethodGet, realm, nil, &r)
	config := map[string][]string{"priority": {fmt.Sprint(priority)}, "enabled": {"true"}, "active": {"true"}, "algorithm": {"RS256"}}
	provider := "rsa-generated"
	if privateKeyPEM != nil {
		provider, config["privateKey"] = "rsa", []string{string(privateKeyPEM)}
	}
	loc := k.Admin(t, http.MethodPost, realm+"/components", map[string]any{
		"name": fmt.Sprintf("%s-%d", provider, priority), "providerId": provider,
		"providerType": "org.keycloak.keys.KeyProvider", "parentId": r.ID, "config": config,
	}, nil)
	component = path.Base(loc)
	var keys struct {
		Keys []struct{ Kid, ProviderID string }
	}
	k.Admin(t, http.MethodGet, realm+"/keys", nil, &keys)
	for _, key := range keys.Keys {
		if key.ProviderID == component {
			return component, key.Kid
		}
	}
	t.Fatalf("realm %s: no key of the new provider %s in %+v", realm, component, keys.Keys)
	return "", ""
}

// RemoveKey deletes a key provider (AddRSAKey's component): its key
// leaves the realm's JWKS at once.
func (k *Keycloak) RemoveKey(t testing.TB, realm, component string) {
	t.Helper()
	k.Admin(t, http.MethodDelete, realm+"/components/"+component, nil, nil)
}
