package e2e

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/apis/projectcontour/v1alpha1"
	"github.com/portcullis/portcullis/e2e/harness"
)

const (
	kcHost       = "app.keycloak.test"
	kcApp        = "https://" + kcHost
	kcClaimsHost = "claims.keycloak.test" // auth server with session.claims.keep
	kcClaimsApp  = "https://" + kcClaimsHost
	kcSignedOut  = kcApp + "/public/signed-out"
	kcRealm      = "portcullis"
	kcForeign    = "master" // another realm (issuer), signing with the same key
	kcClientID   = "portcullis"
	kcSecret     = "e2e-keycloak-client-secret"
	kcCLI        = "portcullis-cli" // public, password grant: users' bearer tokens for portcullis
	kcOther      = "other-service"  // a service whose tokens are not for portcullis
	kcOtherPass  = "e2e-other-secret"
	kcPassword   = "e2e-Password-1"
	kcTokenTTL   = 5 * time.Second // the realm's access and ID token lifetime
	kcManyGroups = 1000
)

// kcStack is the stack of the OIDC tests (portcullis serve with the file
// provider, Envoy, the echo upstream, authserver oidc) in front of a real
// Keycloak: two replicas behind one ExtensionService for app.keycloak.test
// and a third with the documented claim filter for claims.keycloak.test.
type kcStack struct {
	*harness.Stack
	kc       *harness.Keycloak
	ca       *harness.CA // issued Keycloak's and the app's certificates
	issuer   string
	replicas []string // metrics URLs of the app's auth servers
	claims   string   // metrics URL of the claim-filtering one
	// manyReady gets the outcome of adding the user in 1,000 groups.
	manyReady chan error
	manyTook  time.Duration
	// The imported signing key the realm and the foreign realm share.
	keyComponent, kid string
}

// startKeycloakStack starts Keycloak first (the slowest part) and the
// rest of the stack while it starts.
func startKeycloakStack(t *testing.T) *kcStack {
	ca := harness.NewCA(t, "portcullis-keycloak-e2e")
	kc := harness.LaunchKeycloak(t, harness.KeycloakConfig{CA: ca})
	s := &kcStack{kc: kc, ca: ca, issuer: kc.Issuer(kcRealm)}
	echo := harness.StartEcho(t, "echo")
	dir := t.TempDir()
	httpAddr, httpsAddr, _ := harness.StartEnvoyAndControlPlane(t, "--provider", "file", "-f", dir)
	s.Stack = &harness.Stack{Objects: harness.Dir(dir), HTTPAddr: httpAddr, HTTPSAddr: httpsAddr}
	authserver := harness.BuildBinary(t, "github.com/portcullis/portcullis/authserver/cmd/authserver")

	start := time.Now()
	kc.WaitReady(t)
	t.Logf("Keycloak ready %v after the stack", time.Since(start).Round(time.Millisecond))
	s.setUpRealms(t)

	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: harness.AuthNamespace}},
		ca.Issue(t, kcHost).Secret("default", "kc-tls"),
		ca.Issue(t, kcClaimsHost).Secret("default", "kc-claims-tls"),
	}
	objs = append(objs, harness.LoopbackEndpointSlice("default", "echo", 80, echo.Port)...)
	base := s.authConfig(t)
	for _, name := range []string{"kc-a", "kc-b", "kc-claims"} {
		conf, host := base, kcHost
		if name == "kc-claims" {
			conf, host = base+kcClaimFilter, kcClaimsHost
		}
		addr, metrics := s.startAuthServer(t, authserver, name, conf, host)
		objs = append(objs, harness.LoopbackEndpointSlice(harness.AuthNamespace, name, 9443, harness.Port(t, addr))...)
		if name == "kc-claims" {
			s.claims = metrics
		} else {
			s.replicas = append(s.replicas, metrics)
		}
	}
	objs = append(objs, kcExtensionService("kc", "kc-a", "kc-b"), kcExtensionService("kc-claims", "kc-claims"),
		kcProxy(), kcClaimsProxy())
	if err := s.Objects.Apply(context.Background(), objs...); err != nil {
		t.Fatal(err)
	}
	return s
}

// kcClaimFilter is the session claim filter of docs/authserver-oidc.md's
// Keycloak example.
const kcClaimFilter = `session:
  claims:
    keep: [sub, email, name, groups]
`

// authConfig is the auth servers' configuration (allowedRedirectHosts is
// appended per host), as docs/authserver-oidc.md's Keycloak section
// writes it, with the test CA for Keycloak's certificate, and the key set
// fetched again every 2 s (5 min by default) to see a withdrawn key go.
func (s *kcStack) authConfig(t *testing.T) string {
	key := make([]byte, 32)
	rand.Read(key)
	keyFile := filepath.Join(t.TempDir(), "cookie-key")
	writeTestFile(t, keyFile, base64.StdEncoding.EncodeToString(key))
	return fmt.Sprintf(`issuer: %s
providerCAFile: %s
clientID: %s
clientSecretEnv: OIDC_CLIENT_SECRET
scopes: [openid, email, profile]
postLogoutRedirectURL: %s
cookie:
  keyFile: %s
bearer:
  audiences: [%s]
jwksRefreshInterval: 2s
`, s.issuer, s.ca.WriteFile(t), kcClientID, kcSignedOut, keyFile, kcClientID)
}

// startAuthServer starts `authserver oidc` for host and returns its
// address and metrics URL.
func (s *kcStack) startAuthServer(t *testing.T, bin, name, conf, host string) (addr, metrics string) {
	file := filepath.Join(t.TempDir(), name+".yaml")
	writeTestFile(t, file, conf+"allowedRedirectHosts: ["+host+"]\n")
	return startOIDCAuthServer(t, bin, name, file, kcSecret)
}

// setUpRealms creates the realm of the tests through the admin API, a
// client of the same name in the master realm (a foreign issuer), and
// gives both realms the same imported signing key.
func (s *kcStack) setUpRealms(t *testing.T) {
	start := time.Now()
	callbacks := []string{kcApp + "/oauth2/callback", kcClaimsApp + "/oauth2/callback"}
	s.kc.CreateRealm(t, harness.KeycloakRealm{
		Name: kcRealm, AccessTokenLifespan: kcTokenTTL, GroupsScope: true, Groups: kcGroupNames(),
		Clients: []harness.KeycloakClient{
			{ClientID: kcClientID, Secret: kcSecret, RedirectURIs: callbacks, PostLogoutRedirectURIs: []string{kcSignedOut},
				ServiceAccount: true, Audience: kcClientID},
			// Users' access tokens for portcullis, long-lived: they must
			// outlive a key's withdrawal.
			{ClientID: kcCLI, DirectAccessGrants: true, Audience: kcClientID, AccessTokenLifespan: 10 * time.Minute},
			{ClientID: kcOther, Secret: kcOtherPass, ServiceAccount: true},
		},
		Users: []harness.KeycloakUser{
			{Username: "alice", Password: kcPassword, Email: "alice@example.test", EmailVerified: true, Groups: []string{"admins", "users"}},
			{Username: "bob", Password: kcPassword, Email: "bob@example.test", EmailVerified: false, Groups: []string{"users"}},
		},
	})
	s.addManyInBackground(t)
	// Another issuer: Keycloak's master realm (a realm more would cost
	// seconds), with a client of the same name.
	s.kc.CreateClient(t, kcForeign, harness.KeycloakClient{ClientID: kcClientID, Secret: kcSecret, ServiceAccount: true, Audience: kcClientID})
	key := rsaKeyPEM(t)
	s.keyComponent, s.kid = s.kc.AddRSAKey(t, kcRealm, 200, key)
	if _, kid := s.kc.AddRSAKey(t, kcForeign, 200, key); kid != s.kid {
		t.Fatalf("the same key has kid %s in one realm, %s in the other", s.kid, kid)
	}
	t.Logf("realms set up in %v", time.Since(start).Round(time.Millisecond))
}

// addManyInBackground adds the user in the realm's 1,000 groups while
// the other subtests run: Keycloak takes 10 to 30 s to join a user to
// that many groups. Then one token for it, so Keycloak's first, cold reading of
// the groups (up to 15 s on a busy machine) is not in a sign-in that
// Envoy gives 5 s.
func (s *kcStack) addManyInBackground(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s.manyReady = make(chan error, 1)
	go func() {
		start := time.Now()
		err := s.kc.AddUsers(ctx, kcRealm, harness.KeycloakUser{
			Username: "many", Password: kcPassword, Email: "many@example.test", EmailVerified: true, Groups: kcGroupNames(),
		})
		if err == nil {
			_, err = s.kc.RequestToken(ctx, kcRealm, urlValues("grant_type", "password", "username", "many",
				"password", kcPassword, "scope", "openid"), kcCLI, "")
		}
		s.manyTook = time.Since(start)
		s.manyReady <- err
	}()
}

func kcGroupNames() []string {
	g := make([]string, kcManyGroups)
	for i := range g {
		g[i] = fmt.Sprintf("g-%04d", i)
	}
	return g
}

func rsaKeyPEM(t *testing.T) []byte {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
}

// kcExtensionService balances over the named auth server Services, with
// the response timeout the docs give.
func kcExtensionService(name string, targets ...string) *v1alpha1.ExtensionService {
	h2c := "h2c"
	svc := &v1alpha1.ExtensionService{ObjectMeta: metav1.ObjectMeta{Namespace: harness.AuthNamespace, Name: name},
		Spec: v1alpha1.ExtensionServiceSpec{Protocol: &h2c, TimeoutPolicy: &contourv1.TimeoutPolicy{Response: "5s"}}}
	for _, target := range targets {
		svc.Spec.Services = append(svc.Spec.Services, v1alpha1.ExtensionServiceTarget{Name: target, Port: 9443})
	}
	return svc
}

func kcProxy() *contourv1.HTTPProxy {
	echo := []contourv1.Service{{Name: "echo", Port: 80}}
	group := func(g string) *contourv1.AuthorizationPolicy {
		return &contourv1.AuthorizationPolicy{Context: map[string]string{"oidc.portcullis.dev/groups": g}}
	}
	return &contourv1.HTTPProxy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kc-app"},
		Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{Fqdn: kcHost, TLS: &contourv1.TLS{SecretName: "kc-tls"},
				Authorization: &contourv1.AuthorizationServer{
					ExtensionServiceRef: contourv1.ExtensionServiceReference{Namespace: harness.AuthNamespace, Name: "kc"}}},
			Routes: []contourv1.Route{
				{Conditions: []contourv1.MatchCondition{{Prefix: "/public"}}, AuthPolicy: &contourv1.AuthorizationPolicy{Disabled: true}, Services: echo},
				{Conditions: []contourv1.MatchCondition{{Prefix: "/admin"}}, AuthPolicy: group("admins"), Services: echo},
				{Conditions: []contourv1.MatchCondition{{Prefix: "/audit"}}, AuthPolicy: group("auditors"), Services: echo},
				{Conditions: []contourv1.MatchCondition{{Prefix: "/last-group"}}, AuthPolicy: group(fmt.Sprintf("g-%04d", kcManyGroups-1)), Services: echo},
				{Conditions: []contourv1.MatchCondition{{Prefix: "/api"}},
					AuthPolicy: &contourv1.AuthorizationPolicy{Context: map[string]string{"oidc.portcullis.dev/api": "true"}}, Services: echo},
				{Services: echo},
			},
		},
	}
}

func kcClaimsProxy() *contourv1.HTTPProxy {
	return &contourv1.HTTPProxy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kc-claims-app"},
		Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{Fqdn: kcClaimsHost, TLS: &contourv1.TLS{SecretName: "kc-claims-tls"},
				Authorization: &contourv1.AuthorizationServer{
					ExtensionServiceRef: contourv1.ExtensionServiceReference{Namespace: harness.AuthNamespace, Name: "kc-claims"}}},
			Routes: []contourv1.Route{{Services: []contourv1.Service{{Name: "echo", Port: 80}}}},
		},
	}
}

// sum adds one metric series over the app's auth servers.
func (s *kcStack) sum(t *testing.T, series string) float64 {
	var n float64
	for _, u := range s.replicas {
		n += metric(t, u, series)
	}
	return n
}
