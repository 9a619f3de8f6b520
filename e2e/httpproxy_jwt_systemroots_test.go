package e2e

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/e2e/harness"
)

// TestHTTPProxyJWTSystemRoots: a remoteJWKS over https without a
// validation (as a public identity provider's, such as AWS Cognito's) is
// fetched by the real Envoy only from a server whose certificate chains
// to the system's trust roots (--system-ca-file, here a test CA's bundle)
// and names the URI's host. With roots that do not hold the server's CA,
// or a server certificate of another name, the key set is never fetched
// (the handshake fails before the request) and the requests a token
// would have let through are refused: never verified against keys from an
// unverified server.
func TestHTTPProxyJWTSystemRoots(t *testing.T) {
	echo := harness.StartEcho(t, "echo")
	key := newSigningKey(t, "k1")
	idpCA := harness.NewCA(t, "portcullis-e2e-public-ca")
	jwks := startJWKSTLS(t, idpCA.Issue(t, "localhost"))
	jwks.set(key)
	// The same CA, a certificate of another name than the URI's host.
	wrongName := startJWKSTLS(t, idpCA.Issue(t, "idp.other.test"))
	wrongName.set(key)

	listenerCA := harness.NewCA(t, "portcullis-e2e")
	svc := []contourv1.Service{{Name: "echo", Port: 80}}
	proxy := func(name, uri string) *contourv1.HTTPProxy {
		return &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{
				Fqdn: name + ".example.com",
				TLS:  &contourv1.TLS{SecretName: "jwt-cert"},
				JWTProviders: []contourv1.JWTProvider{{Name: "idp", Default: true, Issuer: "https://issuer.test",
					RemoteJWKS: contourv1.RemoteJWKS{URI: uri}}},
			},
			Routes: []contourv1.Route{
				{Services: svc},
				{Conditions: []contourv1.MatchCondition{{Prefix: "/open"}}, JWTVerificationPolicy: &contourv1.JWTVerificationPolicy{Disabled: true}, Services: svc},
			},
		}}
	}
	token := key.sign(t, claims{"iss": "https://issuer.test", "sub": "alice", "exp": time.Now().Add(time.Hour).Unix()})

	// start runs a control plane with the system roots rootsFile, its
	// Envoy, and the proxies jwt (the right server) and wrong-name; it
	// returns a client of Envoy's HTTPS listener once both are served.
	start := func(t *testing.T, rootsFile string) *http.Client {
		dir := t.TempDir()
		_, httpsAddr, _ := harness.StartEnvoyAndControlPlane(t, "--provider", "file", "-f", dir, "--allow-loopback-external-names", "--system-ca-file", rootsFile)
		var all []client.Object
		all = append(all, harness.LoopbackEndpointSlice("default", "echo", 80, echo.Port)...)
		all = append(all, listenerCA.Issue(t, "jwt.example.com", "wrong-name.example.com").Secret("default", "jwt-cert"),
			proxy("jwt", jwks.url), proxy("wrong-name", wrongName.url))
		if err := harness.Dir(dir).Apply(context.Background(), all...); err != nil {
			t.Fatal(err)
		}
		c := harness.HTTPSClient(listenerCA.CertPEM, httpsAddr)
		for _, host := range []string{"jwt", "wrong-name"} {
			harness.EventuallyEcho(t, c, harness.MustRequest(t, "https://"+host+".example.com/open"), http.StatusOK)
		}
		return c
	}
	// status sends a request with the token to host.
	status := func(t *testing.T, c *http.Client, host string) int {
		t.Helper()
		r := harness.MustRequest(t, "https://"+host+".example.com/")
		r.Header.Set("Authorization", "Bearer "+token)
		resp := doRequest(t, c, r)
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	// refused checks, a few times over a while (fetch failures are
	// retried), that host refuses the token, and that server s, whose
	// verification fails, was not fetched from meanwhile.
	refused := func(t *testing.T, c *http.Client, host string, s *jwksServer) {
		t.Helper()
		before := s.fetches.Load()
		for range 5 {
			if code := status(t, c, host); code != http.StatusUnauthorized {
				t.Fatalf("%s: a valid token: status %d, want 401 (keys from an unverified server)", host, code)
			}
			time.Sleep(300 * time.Millisecond)
		}
		if n := s.fetches.Load() - before; n != 0 {
			t.Errorf("the key set of %s was fetched %d times through a failed verification", host, n)
		}
	}

	t.Run("roots holding the server's CA: the key set is fetched, a valid token accepted", func(t *testing.T) {
		c := start(t, idpCA.WriteFile(t))
		harness.Eventually(t, 30*time.Second, func() error {
			if code := status(t, c, "jwt"); code != http.StatusOK {
				return fmt.Errorf("a valid token: status %d", code)
			}
			return nil
		})
		if jwks.fetches.Load() == 0 {
			t.Error("the key set was not fetched")
		}
		r := harness.MustRequest(t, "https://jwt.example.com/")
		if resp := doRequest(t, c, r); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("no token: status %d, want 401", resp.StatusCode)
		}
		// The right CA, but not the URI's host name: refused.
		refused(t, c, "wrong-name", wrongName)
	})
	t.Run("roots without the server's CA: the key set is never fetched, requests refused", func(t *testing.T) {
		other := harness.NewCA(t, "portcullis-e2e-other-ca")
		c := start(t, other.WriteFile(t))
		refused(t, c, "jwt", jwks)
	})
}
