package oidc

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/oauth2"
)

// rediscoverInterval is the least time between two discovery attempts
// while the provider cannot be reached.
const rediscoverInterval = 5 * time.Second

// discovered is what discovery yields: endpoints and verifiers.
type discovered struct {
	endpoint   oauth2.Endpoint
	endSession string // end_session_endpoint, "" when the provider has none
	idTokens   *oidc.IDTokenVerifier
	bearer     *oidc.IDTokenVerifier // nil when bearer tokens are off
}

// discovery finds the provider lazily and keeps the result: the server
// starts (and answers 500 for sign-ins) while the provider is down, and
// tries again at most every rediscoverInterval.
type discovery struct {
	s      *Settings
	client *http.Client
	tracer trace.Tracer // nil: no spans

	mu      sync.Mutex
	result  *discovered
	lastTry time.Time
	lastErr error
}

func newHTTPClient(caFile string) (*http.Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if caFile != "" {
		pem, err := os.ReadFile(filepath.Clean(caFile))
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s: no PEM certificates", caFile)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}, nil
}

func (d *discovery) get(ctx context.Context) (*discovered, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.result != nil {
		return d.result, nil
	}
	if !d.lastTry.IsZero() && time.Since(d.lastTry) < rediscoverInterval {
		return nil, d.lastErr
	}
	d.lastTry = time.Now()
	d.result, d.lastErr = d.discover(ctx)
	return d.result, d.lastErr
}

func (d *discovery) discover(ctx context.Context) (*discovered, error) {
	ctx, cancel := context.WithTimeout(oidc.ClientContext(ctx, d.client), 10*time.Second)
	defer cancel()
	p, err := oidc.NewProvider(ctx, d.s.Issuer)
	if err != nil {
		return nil, fmt.Errorf("discovery of %s: %w", d.s.Issuer, err)
	}
	var claims struct {
		JWKS       string `json:"jwks_uri"`
		EndSession string `json:"end_session_endpoint"`
	}
	if err := p.Claims(&claims); err != nil {
		return nil, fmt.Errorf("discovery of %s: %w", d.s.Issuer, err)
	}
	// The key set outlives this call and fetches with our HTTP client.
	keys := newLimitedKeySet(d.client, claims.JWKS, d.s.JWKSRefreshInterval.Duration)
	if d.tracer != nil {
		keys.tracer = d.tracer
	}
	r := &discovered{
		endpoint:   p.Endpoint(),
		endSession: claims.EndSession,
		idTokens: oidc.NewVerifier(d.s.Issuer, keys, &oidc.Config{
			ClientID: d.s.ClientID, SupportedSigningAlgs: d.s.Bearer.Algorithms,
		}),
	}
	if len(d.s.Bearer.Audiences) > 0 {
		// The audience is checked against the configured list after
		// verification (go-oidc checks a single client ID).
		r.bearer = oidc.NewVerifier(d.s.Issuer, keys, &oidc.Config{
			SkipClientIDCheck: true, SupportedSigningAlgs: d.s.Bearer.Algorithms,
		})
	}
	r.endpoint.AuthStyle = oauth2.AuthStyleInHeader
	if d.s.ClientSecret == "" { // a public client sends its ID in the form
		r.endpoint.AuthStyle = oauth2.AuthStyleInParams
	}
	return r, nil
}
