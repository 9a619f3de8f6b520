package oidc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/portcullis/portcullis/serverkit"
)

// minRefetchInterval is the least time between two JWKS fetches caused by
// tokens that no cached key verifies: forged kids must not turn every
// request into a request to the provider. A token arriving sooner waits
// for the next allowed fetch rather than being refused, so a key the
// provider has just rotated in is taken within this interval.
const minRefetchInterval = time.Second

// maxJWKSSize and maxJWKSKeys bound the provider's key set document: a
// token without a kid is tried against every key.
const (
	maxJWKSSize = 1 << 20
	maxJWKSKeys = 100
)

// limitedKeySet is the provider's JWKS, cached, fetched again every
// refreshEvery (in the background, so that withdrawn keys leave) and when
// a token names a key the cache does not have (at most once per
// minRefetchInterval). Only fetches are limited: a token that a cached key
// verifies always verifies (go-oidc's RemoteKeySet gives no cache-only
// verification, so limiting around it refused valid tokens).
type limitedKeySet struct {
	client       *http.Client
	url          string
	refreshEvery time.Duration
	now          func() time.Time
	sleep        func(context.Context, time.Duration) error
	tracer       trace.Tracer

	fetchMu    sync.Mutex     // one fetch at a time
	refreshing atomic.Bool    // a background refresh is running
	bg         sync.WaitGroup // background refreshes (tests wait)

	mu        sync.RWMutex
	keys      []jose.JSONWebKey
	gen       int       // fetches done
	lastFetch time.Time // of the last attempt, failed or not
}

func newLimitedKeySet(client *http.Client, jwksURL string, refreshEvery time.Duration) *limitedKeySet {
	refreshEvery = max(refreshEvery, minRefetchInterval) // Load refuses less; an unset one must not mean "always"
	return &limitedKeySet{client: client, url: jwksURL, refreshEvery: refreshEvery, now: time.Now, sleep: sleepCtx,
		tracer: serverkit.Tracer(nil, tracerScope)}
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

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
	keys, gen, last := k.keys, k.gen, k.lastFetch
	k.mu.RUnlock()
	if gen > 0 && k.now().Sub(last) >= k.refreshEvery {
		k.refreshInBackground(ctx, gen)
	}
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

// refreshInBackground fetches the key set again without holding up the
// request that noticed it was due; the cached keys serve meanwhile. It
// outlives that request, but stays in its trace (a child span that may
// end after its parent).
func (k *limitedKeySet) refreshInBackground(ctx context.Context, seen int) {
	if !k.refreshing.CompareAndSwap(false, true) {
		return
	}
	k.bg.Add(1)
	go func() {
		defer k.bg.Done()
		defer k.refreshing.Store(false)
		// A failure keeps the cached keys (refetch says so) and counts as a
		// fetch: a token with a key they lack fetches again and reports it.
		_, _ = k.refetch(context.WithoutCancel(ctx), seen)
	}()
}

// refetch fetches the key set unless a fetch newer than generation seen
// happened meanwhile (then its keys serve). A fetch sooner than
// minRefetchInterval after the last one waits for it.
func (k *limitedKeySet) refetch(ctx context.Context, seen int) ([]jose.JSONWebKey, error) {
	k.fetchMu.Lock()
	defer k.fetchMu.Unlock()
	k.mu.RLock()
	keys, gen, last := k.keys, k.gen, k.lastFetch
	k.mu.RUnlock()
	if gen != seen {
		return keys, nil
	}
	if wait := minRefetchInterval - k.now().Sub(last); gen > 0 && wait > 0 {
		if err := k.sleep(ctx, wait); err != nil {
			return nil, fmt.Errorf("unknown signing key; waiting for the key set: %w", err)
		}
	}
	now := k.now()
	fresh, err := k.fetch(ctx)
	k.mu.Lock()
	defer k.mu.Unlock()
	k.lastFetch = now // failures count too: a down provider is not hammered
	k.gen++
	if err != nil {
		return keys, err // the keys we had still serve
	}
	k.keys = fresh // a key the provider withdrew leaves here
	return fresh, nil
}

func (k *limitedKeySet) fetch(ctx context.Context) (_ []jose.JSONWebKey, err error) {
	ctx, span := k.tracer.Start(ctx, spanJWKSFetch)
	defer func() {
		if err != nil {
			// The error names the URL and status at most: no secret.
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}()
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
	return parseKeySet(body)
}

// parseKeySet decodes a JWKS document and keeps the keys that can verify
// a signature.
func parseKeySet(body []byte) ([]jose.JSONWebKey, error) {
	var raw struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, fmt.Errorf("decoding the key set: %w", err)
	}
	if len(raw.Keys) > maxJWKSKeys {
		return nil, fmt.Errorf("key set has %d keys, more than %d", len(raw.Keys), maxJWKSKeys)
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
