package oidc

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
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

// testKeys are RSA keys by kid, made once (2048-bit keys are slow).
var testKeys = sync.OnceValue(func() map[string]*rsa.PrivateKey {
	m := map[string]*rsa.PrivateKey{}
	for _, kid := range []string{"good", "new", "old"} {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			panic(err)
		}
		m[kid] = k
	}
	return m
})

func jwk(kid string, k *rsa.PrivateKey) map[string]string {
	return map[string]string{
		"kty": "RSA", "kid": kid, "alg": "RS256", "use": "sig",
		"n": base64.RawURLEncoding.EncodeToString(k.N.Bytes()),
		"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(k.E)).Bytes()),
	}
}

// fakeClock is the key set's clock; its sleep moves it instead of waiting.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func (c *fakeClock) sleep(_ context.Context, d time.Duration) error {
	c.advance(d)
	return nil
}

// jwksFixture is a key set fed by a stand-in JWKS endpoint (the
// provider's JWKS document is all the key set needs) whose document the
// test changes, counting its fetches and their times, on a fake clock.
type jwksFixture struct {
	ks      *limitedKeySet
	clock   *fakeClock
	fetches *atomic.Int32
	doc     *atomic.Value // []byte: the JWKS served; nil: 500

	mu      sync.Mutex
	fetchAt []time.Time
}

const testRefreshEvery = 5 * time.Minute

func newJWKSFixture(t *testing.T) *jwksFixture {
	t.Helper()
	f := &jwksFixture{clock: &fakeClock{t: time.Unix(1_000_000, 0)}, fetches: &atomic.Int32{}, doc: &atomic.Value{}}
	f.serve("good")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		f.fetches.Add(1)
		f.mu.Lock()
		f.fetchAt = append(f.fetchAt, f.clock.now())
		f.mu.Unlock()
		doc, _ := f.doc.Load().([]byte)
		if doc == nil {
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(doc) // a failed write is the client's error
	}))
	t.Cleanup(srv.Close)
	f.ks = newLimitedKeySet(srv.Client(), srv.URL, testRefreshEvery)
	f.ks.now, f.ks.sleep = f.clock.now, f.clock.sleep
	return f
}

// serve makes the endpoint publish the keys named (none: answer 500).
func (f *jwksFixture) serve(kids ...string) {
	if len(kids) == 0 {
		f.doc.Store([]byte(nil))
		return
	}
	var keys []map[string]string
	for _, kid := range kids {
		keys = append(keys, jwk(kid, testKeys()[kid]))
	}
	b, _ := json.Marshal(map[string]any{"keys": keys})
	f.doc.Store(b)
}

func (f *jwksFixture) verify(t *testing.T, kid string) error {
	t.Helper()
	_, err := f.ks.VerifySignature(context.Background(), signJWT(t, testKeys()[kid], kid))
	return err
}

// TestKeySetRefetchIsRateLimited: tokens naming unknown kids (forged, or
// a key not published yet) fetch the key set at most once per
// minRefetchInterval, waiting for their turn; known kids never fetch.
func TestKeySetRefetchIsRateLimited(t *testing.T) {
	f := newJWKSFixture(t)
	if err := f.verify(t, "good"); err != nil {
		t.Fatalf("valid token: %v", err)
	}
	for range 5 { // a known kid is served from the cache
		if err := f.verify(t, "good"); err != nil {
			t.Fatal(err)
		}
	}
	if f.fetches.Load() != 1 {
		t.Fatalf("fetches = %d, want 1", f.fetches.Load())
	}
	forged := signJWT(t, testKeys()["good"], "forged")
	for range 5 {
		if _, err := f.ks.VerifySignature(context.Background(), forged); err == nil {
			t.Fatal("a token with an unknown kid verified")
		}
	}
	var wg sync.WaitGroup
	for range 20 { // at once: one fetch for all
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = f.ks.VerifySignature(context.Background(), forged) // refused: only the fetches count
		}()
	}
	wg.Wait()
	f.mu.Lock()
	defer f.mu.Unlock()
	// Five in a row: a fetch each, a second apart (the clock moves as
	// they wait). The burst: how many share a fetch depends on when the
	// goroutines run; the spacing holds whatever the timing.
	if n := len(f.fetchAt); n < 7 {
		t.Errorf("fetches = %d for 5 forged kids in a row and 20 at once, want at least 7", n)
	}
	for i := 1; i < len(f.fetchAt); i++ {
		if gap := f.fetchAt[i].Sub(f.fetchAt[i-1]); gap < minRefetchInterval {
			t.Errorf("fetch %d came %v after the one before, want at least %v", i, gap, minRefetchInterval)
		}
	}
}

// TestKeySetNewKeyWithoutBlackout: a key the provider starts signing with
// right after a fetch is taken at the next allowed fetch (within
// minRefetchInterval), not refused: the old limit refused it for 10 s.
func TestKeySetNewKeyWithoutBlackout(t *testing.T) {
	f := newJWKSFixture(t)
	if err := f.verify(t, "good"); err != nil {
		t.Fatal(err)
	}
	f.serve("good", "new") // the provider rotates in a new key
	start := f.clock.now()
	if err := f.verify(t, "new"); err != nil {
		t.Fatalf("a token signed with the provider's new key: %v", err)
	}
	if waited := f.clock.now().Sub(start); waited > minRefetchInterval {
		t.Errorf("waited %v for the new key, want at most %v", waited, minRefetchInterval)
	}
	if f.fetches.Load() != 2 {
		t.Errorf("fetches = %d, want 2", f.fetches.Load())
	}
}

// TestKeySetDropsWithdrawnKeys: the key set is fetched again every
// refreshEvery, and a key the provider withdrew stops verifying; it used
// to be trusted until a restart. A provider that fails keeps the keys.
func TestKeySetDropsWithdrawnKeys(t *testing.T) {
	f := newJWKSFixture(t)
	f.serve("good", "old")
	if err := f.verify(t, "old"); err != nil {
		t.Fatal(err)
	}
	f.serve("good") // withdrawn: compromised, or rotated out
	f.clock.advance(testRefreshEvery - time.Second)
	if err := f.verify(t, "old"); err != nil || f.fetches.Load() != 1 {
		t.Fatalf("before refreshEvery: %v, fetches %d; want the cached key, no fetch", err, f.fetches.Load())
	}
	f.clock.advance(time.Second)
	if err := f.verify(t, "good"); err != nil { // starts the refresh; the answer does not wait for it
		t.Fatalf("a cached key when the refresh is due: %v", err)
	}
	f.ks.bg.Wait()
	if f.fetches.Load() != 2 {
		t.Fatalf("fetches = %d after refreshEvery, want 2", f.fetches.Load())
	}
	if err := f.verify(t, "old"); err == nil {
		t.Error("a key withdrawn from the provider's key set still verifies after the refresh")
	}
	if err := f.verify(t, "good"); err != nil {
		t.Errorf("a key still published: %v", err)
	}

	f.serve() // the provider fails: keep what we have
	f.clock.advance(testRefreshEvery)
	if err := f.verify(t, "good"); err != nil { // starts the refresh, which fails
		t.Fatalf("a cached key when the refresh is due: %v", err)
	}
	f.ks.bg.Wait()
	if err := f.verify(t, "good"); err != nil || f.fetches.Load() < 4 {
		t.Errorf("after a failed refresh: %v (fetches %d); want the keys kept", err, f.fetches.Load())
	}
}

// TestKeySetRateLimitNeverRefusesCachedKeys: the refetch limit applies to
// fetches only. A token that a cached key verifies must verify even right
// after a forged kid used up the refetch (an attacker sending one forged
// token per interval must not lock out every user), and tokens without a
// kid (providers with a single key omit it) must verify every time.
func TestKeySetRateLimitNeverRefusesCachedKeys(t *testing.T) {
	f := newJWKSFixture(t)
	// A forged kid first: it fetches the key set (and is refused).
	if _, err := f.ks.VerifySignature(context.Background(), signJWT(t, testKeys()["good"], "forged")); err == nil {
		t.Fatal("a token with an unknown kid verified")
	}
	for i := range 3 {
		if err := f.verify(t, "good"); err != nil {
			t.Fatalf("valid token %d after a forged kid: %v", i, err)
		}
		if _, err := f.ks.VerifySignature(context.Background(), signJWT(t, testKeys()["good"], "")); err != nil {
			t.Fatalf("valid token %d without a kid: %v", i, err)
		}
	}
	if f.fetches.Load() != 1 {
		t.Errorf("fetches = %d, want 1", f.fetches.Load())
	}
}

// TestKeySetBounds: the provider's document is bounded in bytes and in
// keys (a token without a kid is tried against every key).
func TestKeySetBounds(t *testing.T) {
	f := newJWKSFixture(t)
	k := jwk("x", testKeys()["good"])
	var many []map[string]string
	for i := range maxJWKSKeys + 1 {
		c := map[string]string{}
		for a, b := range k {
			c[a] = b
		}
		c["kid"] = fmt.Sprint(i)
		many = append(many, c)
	}
	tooMany, _ := json.Marshal(map[string]any{"keys": many})
	for name, doc := range map[string][]byte{
		"too many keys": tooMany,
		"too large":     []byte(`{"keys":[],"pad":"` + strings.Repeat("x", maxJWKSSize) + `"}`),
	} {
		f.doc.Store(doc)
		if _, err := f.ks.fetch(context.Background()); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestKeySetRefusesMalformedTokens: no panic, no fetch.
func TestKeySetRefusesMalformedTokens(t *testing.T) {
	ks := newLimitedKeySet(http.DefaultClient, "http://127.0.0.1:1/jwks", time.Minute)
	for _, jwt := range []string{"", "garbage", "e30.e30.", `{"payload":"e30","signatures":[]}`, "eyJhbGciOiJub25lIn0.e30."} {
		if _, err := ks.VerifySignature(context.Background(), jwt); err == nil {
			t.Errorf("%q verified", jwt)
		}
	}
}
