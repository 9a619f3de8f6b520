package oidc

import (
	"context"
	"crypto/subtle"
	"net/http"
	"time"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"go.opentelemetry.io/otel/codes"
	"golang.org/x/oauth2"

	"github.com/portcullis/portcullis/authserver/internal/check"
)

// callbackRun is one callback: its request, the state cookie it owns (the
// only one it may clear: other tabs' sign-ins go on) and where "Sign in
// again" leads.
type callbackRun struct {
	srv  *Server
	r    *request
	name string // this sign-in's state cookie
	link string // the original URL once known, else "/"
}

// refuse counts and logs a failed callback and answers the error page,
// clearing this sign-in's state cookie when the browser sent it.
func (c *callbackRun) refuse(status int, reason, msg string) (*authv3.CheckResponse, error) {
	c.srv.fail(c.r, reason)
	c.srv.log.Info("sign-in refused", "reason", reason, "host", c.r.host)
	resp, err := signInFailed(status, msg, c.link).respond(c.r)
	if err != nil {
		return nil, err
	}
	return withCookies(resp, c.clearState())
}

func (c *callbackRun) clearState() []string {
	if _, ok := c.r.cookies[c.name]; !ok {
		return nil
	}
	return []string{c.srv.jar.clear(c.name)}
}

// flowRefusals are the answers to a callback without usable state.
var flowRefusals = map[flowProblem]struct {
	reason, msg string
}{
	flowDuplicate:  {failDuplicateCookie, "This sign-in's state cookie was sent more than once, so it cannot be trusted."},
	flowUnknown:    {failStateMissing, "This sign-in is not known to this browser: it was already completed, has expired, or was started elsewhere."},
	flowUnreadable: {failStateMissing, "This sign-in's state cookie is not valid."},
	flowMismatch:   {failStateMismatch, "This sign-in's state does not match."},
}

// callback completes a sign-in: the state cookie of the callback's state,
// code exchange with the PKCE verifier, ID token verification (issuer,
// audience, expiry, nonce). A sign-in that has expired starts again.
func (srv *Server) callback(ctx context.Context, r *request) (*authv3.CheckResponse, error) {
	state := r.query.Get("state")
	c := &callbackRun{srv: srv, r: r, name: srv.flowCookie(state), link: "/"}
	fs, problem := srv.callbackFlow(r, c.name, state)
	if problem == flowOK || problem == flowExpired {
		if srv.redirect.check(fs.Return) == nil {
			c.link = fs.Return
		}
	}
	if r.query.Get("error") != "" {
		return c.refuse(http.StatusUnauthorized, failProviderError, "The identity provider refused the sign-in.")
	}
	if problem == flowExpired {
		// Its original URL is known: start again from there (a fresh state
		// cookie, so no loop) rather than strand the user on an error.
		srv.fail(r, failStateMissing)
		return srv.startSignIn(ctx, r, c.link)
	}
	if f, bad := flowRefusals[problem]; bad {
		return c.refuse(http.StatusBadRequest, f.reason, f.msg)
	}
	if !srv.usedStates.add(fs.State, time.Unix(fs.Expiry, 0), srv.now()) {
		return c.refuse(http.StatusBadRequest, failStateReplayed, "This sign-in was already completed.")
	}
	if err := srv.redirect.check(fs.Return); err != nil {
		return c.refuse(http.StatusBadRequest, failRedirect, "The page to return to is not allowed: "+err.Error()+".")
	}
	return c.complete(ctx, fs)
}

// complete exchanges the code, verifies the ID token and sets the session.
func (c *callbackRun) complete(ctx context.Context, fs flowState) (*authv3.CheckResponse, error) {
	srv, r := c.srv, c.r
	d, err := srv.disc.get(ctx)
	if err != nil {
		srv.fail(r, failDiscovery)
		return nil, err
	}
	ctx = context.WithValue(ctx, oauth2.HTTPClient, srv.client)
	tok, err := srv.exchange(ctx, srv.oauth2Config(r, d), r.query.Get("code"), fs.Verifier)
	if err != nil {
		srv.log.Info("code exchange failed", "error", err)
		return c.refuse(http.StatusUnauthorized, failExchange, "The identity provider did not accept the sign-in's authorization code.")
	}
	rawID, _ := tok.Extra("id_token").(string)
	if rawID == "" {
		return c.refuse(http.StatusUnauthorized, failIDToken, "The identity provider sent no ID token.")
	}
	idt, err := d.idTokens.Verify(ctx, rawID)
	if err != nil {
		srv.log.Info("ID token rejected", "error", err)
		return c.refuse(http.StatusUnauthorized, failIDToken, "The identity provider's ID token is not valid.")
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(fs.Nonce)) != 1 {
		return c.refuse(http.StatusUnauthorized, failNonce, "The ID token does not belong to this sign-in (nonce).")
	}
	sess, err := newSession(idt, rawID, tok, srv.now(), srv.s.Session.Claims)
	if err != nil {
		return nil, err
	}
	cookies, err := srv.sessionCookies(r, sess)
	if srv.sessionTooLarge(r, err) {
		resp, err := tooLargePage()
		if err != nil {
			return nil, err
		}
		return withCookies(resp, c.clearState())
	}
	if err != nil {
		return nil, err
	}
	resp, err := check.Redirect(fs.Return)
	if err != nil {
		return nil, err
	}
	srv.event(r, eventCallback)
	return withCookies(resp, append(cookies, c.clearState()...))
}

// exchange redeems the authorization code at the token endpoint, in an
// oidc.code_exchange span.
func (srv *Server) exchange(ctx context.Context, conf *oauth2.Config, code, verifier string) (*oauth2.Token, error) {
	ctx, span := srv.tracer.Start(ctx, spanCodeExchange)
	defer span.End()
	tok, err := conf.Exchange(ctx, code, oauth2.VerifierOption(verifier))
	if err != nil {
		span.SetStatus(codes.Error, "the token endpoint refused the code") // its answer may echo the request
	}
	return tok, err
}
