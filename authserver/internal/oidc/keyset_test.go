package oidc

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// signJWT makes an RS256 compact JWS with kid.
func signJWT(t *testing.T, k *rsa.PrivateKey, kid string) string {
	t.Helper()
	enc := base64.RawURLEncoding
	h, _ := json.Marshal(map[string]string{"alg": "RS256", "kid": kid, "typ": "JWT"})
	p, _ := json.Marshal(map[string]any{"iss": "https://issuer.example", "sub": "x"})
	input := enc.EncodeToString(h) + "." + enc.EncodeToString(p)
	sum := sha256.Sum256([]byte(input))
	sig, err := rsa.SignPKCS1v15(rand.Reader, k, crypto.SHA256, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	return input + "." + enc.EncodeToString(sig)
}

// jwksFixture is a key set fed by a stand-in JWKS endpoint (the
// provider's JWKS document is all the key set needs) serving one RSA key
// with kid "good", counting its fetches, on a clock the test moves.
type jwksFixture struct {
	k       *rsa.PrivateKey
	ks      *limitedKeySet
	fetches *atomic.Int32
	now     *time.Time
}

func newJWKSFixture(t *testing.T) jwksFixture {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	var fetches atomic.Int32
	jwks, _ := json.Marshal(map[string]any{"keys": []map[string]string{{
		"kty": "RSA", "kid": "good", "alg": "RS256", "use": "sig",
		"n": base64.RawURLEncoding.EncodeToString(k.N.Bytes()),
		"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(k.E)).Bytes()),
	}}})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fetches.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write(jwks)
	}))
	t.Cleanup(srv.Close)
	now := time.Unix(1_000_000, 0)
	ks := newLimitedKeySet(srv.Client(), srv.URL)
	ks.now = func() time.Time { return now }
	return jwksFixture{k: k, ks: ks, fetches: &fetches, now: &now}
}

// TestKeySetRefetchIsRateLimited counts the JWKS fetches.
func TestKeySetRefetchIsRateLimited(t *testing.T) {
	f := newJWKSFixture(t)
	k, ks, fetches, now := f.k, f.ks, f.fetches, f.now
	ctx := context.Background()

	if _, err := ks.VerifySignature(ctx, signJWT(t, k, "good")); err != nil {
		t.Fatalf("valid token: %v", err)
	}
	if fetches.Load() != 1 {
		t.Fatalf("fetches = %d, want 1", fetches.Load())
	}
	for range 5 { // a known kid is served from the cache
		if _, err := ks.VerifySignature(ctx, signJWT(t, k, "good")); err != nil {
			t.Fatal(err)
		}
	}
	for range 5 { // unknown kids within the interval never reach the provider
		if _, err := ks.VerifySignature(ctx, signJWT(t, k, "forged")); err == nil {
			t.Fatal("a token with an unknown kid verified")
		}
	}
	if fetches.Load() != 1 {
		t.Errorf("fetches = %d after unknown kids within the interval, want 1", fetches.Load())
	}
	*now = now.Add(refetchInterval + time.Second)
	ks.VerifySignature(ctx, signJWT(t, k, "forged"))
	if fetches.Load() != 2 {
		t.Errorf("fetches = %d after the interval, want 2 (an unknown kid may trigger a refetch)", fetches.Load())
	}
}

// TestKeySetRateLimitNeverRefusesCachedKeys: the refetch limit applies to
// fetches only. A token that a cached key verifies must verify even right
// after a forged kid used up the refetch (an attacker sending one forged
// token per interval must not lock out every user), and tokens without a
// kid (providers with a single key omit it) must verify every time.
func TestKeySetRateLimitNeverRefusesCachedKeys(t *testing.T) {
	f := newJWKSFixture(t)
	k, ks, fetches := f.k, f.ks, f.fetches
	ctx := context.Background()

	// A forged kid first: it fetches the key set (and is refused).
	if _, err := ks.VerifySignature(ctx, signJWT(t, k, "forged")); err == nil {
		t.Fatal("a token with an unknown kid verified")
	}
	for i := range 3 {
		if _, err := ks.VerifySignature(ctx, signJWT(t, k, "good")); err != nil {
			t.Fatalf("valid token %d after a forged kid: %v", i, err)
		}
		if _, err := ks.VerifySignature(ctx, signJWT(t, k, "")); err != nil {
			t.Fatalf("valid token %d without a kid: %v", i, err)
		}
	}
	if fetches.Load() != 1 {
		t.Errorf("fetches = %d, want 1", fetches.Load())
	}
}

// TestKeySetRefusesMalformedTokens: no panic, no fetch.
func TestKeySetRefusesMalformedTokens(t *testing.T) {
	ks := newLimitedKeySet(http.DefaultClient, "http://127.0.0.1:1/jwks")
	for _, jwt := range []string{"", "garbage", "e30.e30.", `{"payload":"e30","signatures":[]}`, "eyJhbGciOiJub25lIn0.e30."} {
		if _, err := ks.VerifySignature(context.Background(), jwt); err == nil {
			t.Errorf("%q verified", jwt)
		}
	}
}
