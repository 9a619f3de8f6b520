package e2e

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/e2e/harness"
)

// TestHTTPProxyJWT: jwtProviders and jwtVerificationPolicy through the
// file provider into the real Envoy, with tokens signed here (RS256)
// against a JWKS this test serves: the default provider verifies every
// route (included ones too) but those that disable it, the issuer,
// audience, expiry and signature are checked, the token reaches the
// upstream only with forwardJWT, and a rotated key set is fetched again
// once its cache duration is over.
func TestHTTPProxyJWT(t *testing.T) {
	echo := harness.StartEcho(t, "echo")
	jwks := startJWKS(t)
	k1, k2 := newSigningKey(t, "k1"), newSigningKey(t, "k2")
	jwks.set(k1)

	ca := harness.NewCA(t, "portcullis-e2e")
	dir := t.TempDir()
	_, httpsAddr, _ := harness.StartEnvoyAndControlPlane(t, "--provider", "file", "-f", dir, "--allow-loopback-external-names")
	svc := []contourv1.Service{{Name: "echo", Port: 80}}
	remote := contourv1.RemoteJWKS{URI: jwks.url, CacheDuration: "1s"}
	var all []client.Object
	all = append(all, harness.LoopbackEndpointSlice("default", "echo", 80, echo.Port)...)
	all = append(all, ca.Issue(t, "jwt.example.com").Secret("default", "jwt-cert"),
		&contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "jwt"}, Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{
				Fqdn: "jwt.example.com",
				TLS:  &contourv1.TLS{SecretName: "jwt-cert"},
				JWTProviders: []contourv1.JWTProvider{
					{Name: "idp", Default: true, Issuer: "https://issuer.test", Audiences: []string{"api"}, RemoteJWKS: remote},
					{Name: "forwarding", Issuer: "https://issuer.test", RemoteJWKS: remote, ForwardJWT: true},
				},
			},
			Routes: []contourv1.Route{
				{Services: svc},
				{Conditions: []contourv1.MatchCondition{{Prefix: "/open"}}, JWTVerificationPolicy: &contourv1.JWTVerificationPolicy{Disabled: true}, Services: svc},
				{Conditions: []contourv1.MatchCondition{{Prefix: "/forward"}}, JWTVerificationPolicy: &contourv1.JWTVerificationPolicy{Require: "forwarding"}, Services: svc},
			},
			Includes: []contourv1.Include{{Name: "team", Conditions: []contourv1.MatchCondition{{Prefix: "/team"}}}},
		}},
		&contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "team"}, Spec: contourv1.HTTPProxySpec{
			Routes: []contourv1.Route{{Services: svc}},
		}},
	)
	if err := harness.Dir(dir).Apply(context.Background(), all...); err != nil {
		t.Fatal(err)
	}
	c := harness.HTTPSClient(ca.CertPEM, httpsAddr)
	harness.EventuallyEcho(t, c, harness.MustRequest(t, "https://jwt.example.com/open"), http.StatusOK)

	now := time.Now()
	good := claims{"iss": "https://issuer.test", "aud": "api", "sub": "alice", "exp": now.Add(time.Hour).Unix()}
	with := func(k string, v any) claims {
		c := claims{}
		for a, b := range good {
			c[a] = b
		}
		c[k] = v
		return c
	}
	// send requests path with the token (none when empty) and returns
	// the status, and what the upstream got (nil when not reached).
	send := func(path, token string) (int, *harness.EchoRequest) {
		t.Helper()
		r := harness.MustRequest(t, "https://jwt.example.com"+path)
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		before := echo.Requests()
		resp := doRequest(t, c, r)
		body, _ := io.ReadAll(resp.Body)
		if echo.Requests() == before {
			return resp.StatusCode, nil
		}
		got, err := harness.DecodeEcho(body)
		if err != nil {
			t.Fatalf("%s: %v: %s", path, err, body)
		}
		return resp.StatusCode, got
	}
	for _, tc := range []struct {
		name, path, token string
		want              int
	}{
		{"no token: the default provider requires one", "/", "", http.StatusUnauthorized},
		{"a valid token", "/", k1.sign(t, good), http.StatusOK},
		{"an included route has the default provider", "/team/x", "", http.StatusUnauthorized},
		{"an included route with a valid token", "/team/x", k1.sign(t, good), http.StatusOK},
		{"a route that disables verification", "/open", "", http.StatusOK},
		{"another issuer", "/", k1.sign(t, with("iss", "https://other.test")), http.StatusUnauthorized},
		{"another audience", "/", k1.sign(t, with("aud", "web")), http.StatusForbidden},
		{"expired", "/", k1.sign(t, with("exp", now.Add(-time.Hour).Unix())), http.StatusUnauthorized},
		{"a key the JWKS does not have", "/", k2.sign(t, good), http.StatusUnauthorized},
		{"a forged signature", "/", k1.forge(t, good), http.StatusUnauthorized},
		{"a route requiring another provider (no audience check)", "/forward", k1.sign(t, with("aud", "web")), http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, got := send(tc.path, tc.token)
			if code != tc.want {
				t.Fatalf("status %d, want %d", code, tc.want)
			}
			if (got != nil) != (tc.want == http.StatusOK) {
				t.Errorf("reached the upstream: %v, want %v", got != nil, tc.want == http.StatusOK)
			}
		})
	}
	t.Run("the token reaches the upstream only with forwardJWT", func(t *testing.T) {
		token := k1.sign(t, good)
		if _, got := send("/", token); got == nil || got.Headers.Get("Authorization") != "" {
			t.Errorf("without forwardJWT, the upstream got %v", got)
		}
		if _, got := send("/forward", token); got == nil || got.Headers.Get("Authorization") != "Bearer "+token {
			t.Errorf("with forwardJWT, the upstream got %v", got)
		}
	})
	t.Run("key rotation: the new key set is fetched once the cache expires", func(t *testing.T) {
		fetches := jwks.fetches.Load()
		jwks.set(k2)
		harness.Eventually(t, 30*time.Second, func() error {
			if code, _ := send("/", k2.sign(t, good)); code != http.StatusOK {
				return fmt.Errorf("a token of the new key: status %d", code)
			}
			return nil
		})
		if code, _ := send("/", k1.sign(t, good)); code != http.StatusUnauthorized {
			t.Errorf("a token of the retired key: status %d, want 401", code)
		}
		if jwks.fetches.Load() == fetches {
			t.Error("the JWKS was not fetched again")
		}
	})
}

type claims map[string]any

// signingKey is an RSA key with its key id.
type signingKey struct {
	kid string
	key *rsa.PrivateKey
}

func newSigningKey(t *testing.T, kid string) *signingKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return &signingKey{kid: kid, key: k}
}

// jwk is the key's public half as a JSON Web Key.
func (k *signingKey) jwk() map[string]string {
	b64 := base64.RawURLEncoding.EncodeToString
	return map[string]string{
		"kty": "RSA", "alg": "RS256", "use": "sig", "kid": k.kid,
		"n": b64(k.key.N.Bytes()), "e": b64(big.NewInt(int64(k.key.E)).Bytes()),
	}
}

// sign is a compact RS256 JWS of c.
func (k *signingKey) sign(t *testing.T, c claims) string {
	signingInput := k.signingInput(t, c)
	sum := sha256.Sum256([]byte(signingInput))
	sig, err := rsa.SignPKCS1v15(rand.Reader, k.key, crypto.SHA256, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	return signingInput + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// forge is a token of c with the signature of other claims.
func (k *signingKey) forge(t *testing.T, c claims) string {
	other := k.sign(t, claims{"iss": "someone else"})
	return k.signingInput(t, c) + other[strings.LastIndex(other, "."):]
}

func (k *signingKey) signingInput(t *testing.T, c claims) string {
	header, err := json.Marshal(map[string]string{"alg": "RS256", "typ": "JWT", "kid": k.kid})
	if err != nil {
		t.Fatal(err)
	}
	payload, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(header) + "." + base64.RawURLEncoding.EncodeToString(payload)
}

// jwksServer serves the public keys of its current key set on
// 127.0.0.1, counting the fetches.
type jwksServer struct {
	url     string
	mu      sync.Mutex
	keys    []*signingKey
	fetches atomic.Int64
}

// startJWKS serves the key set over plain HTTP, at http://127.0.0.1:port.
func startJWKS(t *testing.T) *jwksServer { return serveJWKS(t, nil) }

// startJWKSTLS serves the key set over HTTPS with the certificate kp, at
// https://localhost:port: a host name, which the certificate must have
// for a client verifying it. A fetch whose TLS handshake fails is not
// counted.
func startJWKSTLS(t *testing.T, kp *harness.KeyPair) *jwksServer { return serveJWKS(t, kp) }

func serveJWKS(t *testing.T, kp *harness.KeyPair) *jwksServer {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &jwksServer{url: fmt.Sprintf("http://%s/jwks", l.Addr())}
	if kp != nil {
		cert, err := tls.X509KeyPair(kp.CertPEM, kp.KeyPEM)
		if err != nil {
			t.Fatal(err)
		}
		l = tls.NewListener(l, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
		s.url = fmt.Sprintf("https://localhost:%d/jwks", l.Addr().(*net.TCPAddr).Port)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s.fetches.Add(1)
		s.mu.Lock()
		keys := make([]map[string]string, len(s.keys))
		for i, k := range s.keys {
			keys[i] = k.jwk()
		}
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": keys})
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return s
}

func (s *jwksServer) set(keys ...*signingKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys = keys
}
