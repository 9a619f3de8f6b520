package oidc

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
)

// refetchInterval is the least time between two JWKS fetches caused by a
// token whose key ID we have not seen: forged kids must not turn every
// request into a request to the provider.
const refetchInterval = 10 * time.Second

// limitedKeySet is go-oidc's RemoteKeySet (cached keys, refetched when a
// token names an unknown kid) with those refetches rate-limited.
type limitedKeySet struct {
	remote *oidc.RemoteKeySet
	now    func() time.Time

	mu        sync.Mutex
	known     map[string]bool // kids that verified a signature
	lastFetch time.Time
}

func newLimitedKeySet(ctx context.Context, jwksURL string) *limitedKeySet {
	return &limitedKeySet{remote: oidc.NewRemoteKeySet(ctx, jwksURL), now: time.Now, known: map[string]bool{}}
}

var errKeyRateLimited = errors.New("unknown signing key; key set refetch rate-limited")

// VerifySignature implements oidc.KeySet.
func (k *limitedKeySet) VerifySignature(ctx context.Context, jwt string) ([]byte, error) {
	kid := jwtKeyID(jwt)
	k.mu.Lock()
	if !k.known[kid] {
		// The remote key set fetches when no cached key verifies.
		if now := k.now(); !k.lastFetch.IsZero() && now.Sub(k.lastFetch) < refetchInterval {
			k.mu.Unlock()
			return nil, errKeyRateLimited
		} else {
			k.lastFetch = now
		}
	}
	k.mu.Unlock()
	payload, err := k.remote.VerifySignature(ctx, jwt)
	if err == nil && kid != "" {
		k.mu.Lock()
		if len(k.known) > 64 { // keys rotate; forget old ones now and then
			clear(k.known)
		}
		k.known[kid] = true
		k.mu.Unlock()
	}
	return payload, err
}

// jwtKeyID reads the kid from a compact JWS header ("" when absent or
// unreadable: verification then fails or refetches under the limit).
func jwtKeyID(jwt string) string {
	h, _, ok := strings.Cut(jwt, ".")
	if !ok || len(h) > 2048 {
		return ""
	}
	b, err := base64.RawURLEncoding.DecodeString(h)
	if err != nil {
		return ""
	}
	var header struct {
		Kid string `json:"kid"`
	}
	if json.Unmarshal(b, &header) != nil {
		return ""
	}
	return header.Kid
}
