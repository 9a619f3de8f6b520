package oidc

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"go.opentelemetry.io/otel/codes"
	"golang.org/x/oauth2"
)

// session is the sealed content of the session cookie: everything needed
// to serve, refresh and end it, so that no replica keeps state.
//
// The claims are stored once: by default as the raw ID token (which logout
// needs for id_token_hint, and which holds them all), or, with a
// session.claims filter, as the filtered claims alone (the raw token would
// carry the dropped ones too).
type session struct {
	ID      string         `json:"i"`           // random; keys the per-session refresh
	Claims  map[string]any `json:"c,omitempty"` // the ID token's, filtered; nil: read from IDToken
	IDToken string         `json:"t,omitempty"` // raw, for id_token_hint at logout; "" when filtered
	Refresh string         `json:"r,omitempty"`
	Expiry  int64          `json:"e"` // unix: the tokens expire, refresh is due
	Created int64          `json:"s"` // unix: sign-in; bounds the lifetime

	decoded map[string]any // IDToken's claims, decoded once; never sealed
}

// setClaims stores the claims of a verified ID token as filter says.
func (s *session) setClaims(claims map[string]any, rawID string, filter ClaimFilter) {
	if filter.active() {
		s.Claims, s.IDToken, s.decoded = filter.apply(claims), "", nil
		return
	}
	s.Claims, s.IDToken, s.decoded = nil, rawID, claims
}

// claims returns the session's claims, decoding them from the raw ID
// token when that is where they are. The token was verified at sign-in and
// the cookie is authenticated, so its payload is trusted as it stands.
func (s *session) claims() (map[string]any, error) {
	if s.Claims != nil {
		return s.Claims, nil
	}
	if s.decoded != nil {
		return s.decoded, nil
	}
	parts := strings.Split(s.IDToken, ".")
	if len(parts) != 3 {
		return nil, errBadCookie
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return nil, errBadCookie
	}
	var claims map[string]any
	if err := json.Unmarshal(payload, &claims); err != nil || claims == nil {
		return nil, errBadCookie
	}
	s.decoded = claims
	return claims, nil
}

func newSession(idt *oidc.IDToken, rawID string, tok *oauth2.Token, now time.Time, filter ClaimFilter) (*session, error) {
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		return nil, err
	}
	s := &session{ID: randomString(), Refresh: tok.RefreshToken, Expiry: tokenExpiry(tok, idt).Unix(), Created: now.Unix()}
	s.setClaims(claims, rawID, filter)
	return s, nil
}

// tokenExpiry is when the session must be refreshed: the access token's
// expiry, or the ID token's when the provider sent none.
func tokenExpiry(tok *oauth2.Token, idt *oidc.IDToken) time.Time {
	if !tok.Expiry.IsZero() {
		return tok.Expiry
	}
	return idt.Expiry
}

// refreshResultTTL is how long a refreshed session is handed to requests
// that still carry the old cookie (parallel requests of one page; the
// provider rotates refresh tokens, so they cannot all refresh).
const refreshResultTTL = 30 * time.Second

// refreshErrorTTL is how long a failed refresh is remembered, so that an
// API client retrying with a dead session does not hammer the provider.
const refreshErrorTTL = 5 * time.Second

// refreshFlights runs one refresh per session ID at a time in this process
// and remembers the result briefly.
type refreshFlights struct {
	mu       sync.Mutex
	inFlight map[string]*flight
	done     map[string]*flight
}

type flight struct {
	wait chan struct{}
	sess *session
	err  error
	at   time.Time
}

func (f *flight) ttl() time.Duration {
	if f.err != nil {
		return refreshErrorTTL
	}
	return refreshResultTTL
}

func newRefreshFlights() *refreshFlights {
	return &refreshFlights{inFlight: map[string]*flight{}, done: map[string]*flight{}}
}

// do returns fn's result for id, running fn only if no call for id is in
// flight or recently done.
func (r *refreshFlights) do(id string, now time.Time, fn func() (*session, error)) (*session, error) {
	r.mu.Lock()
	if f, ok := r.done[id]; ok && now.Sub(f.at) < f.ttl() {
		r.mu.Unlock()
		return f.sess, f.err
	}
	if f, ok := r.inFlight[id]; ok {
		r.mu.Unlock()
		<-f.wait
		return f.sess, f.err
	}
	f := &flight{wait: make(chan struct{})}
	r.inFlight[id] = f
	r.mu.Unlock()

	f.sess, f.err = fn()
	f.at = now

	r.mu.Lock()
	delete(r.inFlight, id)
	for k, old := range r.done {
		if now.Sub(old.at) >= old.ttl() {
			delete(r.done, k)
		}
	}
	r.done[id] = f
	r.mu.Unlock()
	close(f.wait)
	return f.sess, f.err
}

// refresh exchanges the session's refresh token, once per session at a
// time, and returns the new session.
func (srv *Server) refresh(ctx context.Context, old *session) (*session, error) {
	return srv.refreshes.do(old.ID, srv.now(), func() (*session, error) {
		d, err := srv.disc.get(ctx)
		if err != nil {
			return nil, err
		}
		// Not the caller's cancellation: waiting callers share the
		// result. Its values stay: the refresh is in the caller's trace.
		ctx, cancel := context.WithTimeout(context.WithValue(context.WithoutCancel(ctx), oauth2.HTTPClient, srv.client), 15*time.Second)
		defer cancel()
		conf := &oauth2.Config{ClientID: srv.s.ClientID, ClientSecret: srv.s.ClientSecret, Endpoint: d.endpoint, Scopes: srv.s.Scopes}
		tok, err := srv.refreshToken(ctx, conf, old.Refresh)
		if err != nil {
			return nil, fmt.Errorf("refresh: %w", err)
		}
		fresh := *old
		fresh.ID = randomString()
		if tok.RefreshToken != "" {
			fresh.Refresh = tok.RefreshToken
		}
		fresh.Expiry = tok.Expiry.Unix()
		if rawID, _ := tok.Extra("id_token").(string); rawID != "" {
			idt, err := d.idTokens.Verify(ctx, rawID)
			if err != nil {
				return nil, fmt.Errorf("refreshed ID token: %w", err)
			}
			var claims map[string]any
			if err := idt.Claims(&claims); err != nil {
				return nil, err
			}
			oldClaims, err := old.claims()
			if err != nil {
				return nil, err
			}
			if claims["sub"] != oldClaims["sub"] {
				return nil, errors.New("refreshed ID token is for another subject")
			}
			fresh.setClaims(claims, rawID, srv.s.Session.Claims)
			if tok.Expiry.IsZero() {
				fresh.Expiry = idt.Expiry.Unix()
			}
		}
		if !time.Unix(fresh.Expiry, 0).After(srv.now()) {
			return nil, errors.New("refresh returned an expired token")
		}
		// Counted once per refresh, which concurrent requests of one
		// session share; each request notes it (currentSession).
		srv.m.event(eventRefresh)
		return &fresh, nil
	})
}

// refreshToken redeems a refresh token at the token endpoint, in an
// oidc.refresh span.
func (srv *Server) refreshToken(ctx context.Context, conf *oauth2.Config, refresh string) (*oauth2.Token, error) {
	ctx, span := srv.tracer.Start(ctx, spanRefresh)
	defer span.End()
	tok, err := conf.TokenSource(ctx, &oauth2.Token{RefreshToken: refresh, Expiry: time.Unix(1, 0)}).Token()
	if err != nil {
		span.SetStatus(codes.Error, "the token endpoint refused the refresh token") // its answer may echo the request
	}
	return tok, err
}

// claimString renders a claim as a header value: strings as they are,
// lists joined with ",", numbers and booleans in JSON form.
func claimString(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, v != ""
	case bool:
		return strconv.FormatBool(v), true
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), true
	case []any:
		parts := make([]string, 0, len(v))
		for _, e := range v {
			if s, ok := claimString(e); ok {
				parts = append(parts, s)
			}
		}
		return strings.Join(parts, ","), len(parts) > 0
	}
	return "", false
}
