package oidc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// refetchInterval is the least time between two JWKS fetches caused by a
// token that no cached key verifies: forged kids must not turn every
// request into a request to the provider.
const refetchInterval = 10 * time.Second

// maxJWKSSize bounds the provider's key set document.
const maxJWKSSize = 1 << 20

// limitedKeySet is the provider's JWKS, cached and refetched when a token
// names a key the cache does not have, at most once per refetchInterval.
// Only fetches are limited: a token that a cached key verifies always
// verifies (go-oidc's RemoteKeySet gives no cache-only verification, so
// limiting around it refused valid tokens).
type limitedKeySet struct {
	client *http.Client
	url    string
	now    func() time.Time

	fetchMu sync.Mutex // one fetch at a time

	mu        sync.RWMutex
	keys      []jose.JSONWebKey
	gen       int // fetches done
	lastFetch time.Time
}

func newLimitedKeySet(client *http.Client, jwksURL string) *limitedKeySet {
	return &limitedKeySet{client: client, url: jwksURL, now: time.Now}
}

var errKeyRateLimited = errors.New("unknown signing key; key set refetch rate-limited")

// signingAlgorithms are the algorithms a token may be parsed with; the
// verifier narrows them to the configured ones before calling us.
var signingAlgorithms = func() []jose.SignatureAlgorithm {
	var algs []jose.SignatureAlgorithm
	for a := range allowedAlgorithms {
		algs = append(algs, jose.SignatureAlgorithm(a))
	}
	return algs
}()

// VerifySignature implements oidc.KeySet.
func (k *limitedKeySet) VerifySignature(ctx context.Context, jwt string) ([]byte, error) {
	jws, err := jose.ParseSignedCompact(jwt, signingAlgorithms)
	if err != nil || len(jws.Signatures) != 1 {
		return nil, fmt.Errorf("malformed jwt: %v", err)
	}
	kid := jws.Signatures[0].Header.KeyID
	k.mu.RLock()
	keys, gen := k.keys, k.gen
	k.mu.RUnlock()
	if p, ok := verifyWith(jws, kid, keys); ok {
		return p, nil
	}
	if keys, err = k.refetch(ctx, gen); err != nil {
		return nil, err
	}
	if p, ok := verifyWith(jws, kid, keys); ok {
		return p, nil
	}
	return nil, errors.New("no key of the provider verifies the token's signature")
}

func verifyWith(jws *jose.JSONWebSignature, kid string, keys []jose.JSONWebKey) ([]byte, bool) {
	for i := range keys {
		if kid == "" || keys[i].KeyID == kid {
			if p, err := jws.Verify(&keys[i]); err == nil {
				return p, true
			}
		}
	}
	return nil, false
}

// refetch fetches the key set unless a fetch newer than generation seen
// happened meanwhile (then its keys serve) or the last one is too recent.
func (k *limitedKeySet) refetch(ctx context.Context, seen int) ([]jose.JSONWebKey, error) {
	k.fetchMu.Lock()
	defer k.fetchMu.Unlock()
	k.mu.RLock()
	keys, gen, last := k.keys, k.gen, k.lastFetch
	k.mu.RUnlock()
	if gen != seen {
		return keys, nil
	}
	now := k.now()
	if gen > 0 && now.Sub(last) < refetchInterval {
		return nil, errKeyRateLimited
	}
	keys, err := k.fetch(ctx)
	k.mu.Lock()
	defer k.mu.Unlock()
	k.lastFetch = now // failures count too: a down provider is not hammered
	k.gen++
	if err != nil {
		return nil, err
	}
	k.keys = keys
	return keys, nil
}

func (k *limitedKeySet) fetch(ctx context.Context) ([]jose.JSONWebKey, error) {
	// Waiting callers share the result: not bound to this caller's context.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Cache-Control", "no-cache")
	resp, err := k.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetching the key set: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetching the key set: %s", resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSSize+1))
	if err != nil {
		return nil, fmt.Errorf("fetching the key set: %w", err)
	}
	if len(body) > maxJWKSSize {
		return nil, fmt.Errorf("key set larger than %d bytes", maxJWKSSize)
	}
	var raw struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, fmt.Errorf("decoding the key set: %w", err)
	}
	var keys []jose.JSONWebKey
	for _, r := range raw.Keys {
		var key jose.JSONWebKey
		// Skip what cannot verify a signature of ours: unknown key types,
		// symmetric keys (a public document), encryption keys.
		if json.Unmarshal(r, &key) != nil || !key.Valid() || !key.IsPublic() || key.Use == "enc" {
			continue
		}
		keys = append(keys, key)
	}
	return keys, nil
}
