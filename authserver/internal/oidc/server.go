package oidc

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/oauth2"

	"github.com/portcullis/portcullis/authserver/internal/check"
	"github.com/portcullis/portcullis/serverkit"
)

// Name is the backend name in metrics and logs.
const Name = "oidc"

// Server is the OIDC backend's Authorization service.
type Server struct {
	authv3.UnimplementedAuthorizationServer

	s        *Settings
	log      *slog.Logger
	m        *metrics
	sealer   *sealer
	jar      cookieJar
	redirect redirectPolicy
	disc     *discovery
	client   *http.Client
	tracer   trace.Tracer
	now      func() time.Time

	usedStates  *expiringSet    // state values already redeemed
	refreshes   *refreshFlights // one refresh per session at a time
	flowPrefix  string          // starts the name of each sign-in's state cookie
	legacyState string          // the single state cookie of earlier versions
	ownCookies  map[string]bool // session cookie and its chunks
	sessNames   []string        // session cookie and its chunks
}

// New builds the backend from validated settings and registers its metrics
// on reg. It does not contact the provider: discovery happens on first use
// (and is retried) so that the server starts while the provider is down.
func New(s *Settings, logger *slog.Logger, reg prometheus.Registerer, opts ...Option) (*Server, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	sl, err := newSealer(s.Keys)
	if err != nil {
		return nil, err
	}
	client, err := newHTTPClient(s.ProviderCAFile)
	if err != nil {
		return nil, err
	}
	traceClient(client, o.tracing)
	tracer := serverkit.Tracer(o.tracing, tracerScope)
	sessNames := append([]string{s.Cookie.Name}, chunkNames(s.Cookie.Name)...)
	own := map[string]bool{}
	for _, n := range sessNames {
		own[n] = true
	}
	// Dropped claims are gone for browser sessions (bearer tokens keep
	// theirs): say so once rather than let a header vanish silently.
	if f := s.Session.Claims; f.active() {
		for _, h := range s.Headers {
			if !f.keeps(h.Claim) {
				logger.Warn("session.claims drops a claim a header reads: signed-in browsers will not have the header", "header", h.Name, "claim", h.Claim)
			}
		}
		if !f.keeps(s.GroupsClaim) {
			logger.Warn("session.claims drops groupsClaim: routes requiring oidc.portcullis.dev/groups refuse every signed-in browser (403)", "claim", s.GroupsClaim)
		}
	}
	return &Server{
		s: s, log: logger, m: m, sealer: sl, client: client, tracer: tracer, now: time.Now,
		flowPrefix: s.Cookie.Name + "_state_", legacyState: s.Cookie.Name + "_state", ownCookies: own, sessNames: sessNames,
		jar:        cookieJar{domain: s.Cookie.Domain, path: s.Cookie.Path},
		redirect:   newRedirectPolicy(s.AllowedRedirectHosts),
		disc:       &discovery{s: s, client: client, tracer: tracer},
		usedStates: newExpiringSet(),
		refreshes:  newRefreshFlights(),
	}, nil
}

// Discover contacts the provider now; the command calls it at start-up to
// report a misconfiguration early. Check retries on its own.
func (srv *Server) Discover(ctx context.Context) error {
	_, err := srv.disc.get(ctx)
	return err
}

// request is what Check needs from a CheckRequest.
type request struct {
	raw     *authv3.CheckRequest
	method  string
	scheme  string
	host    string
	path    string // without query
	query   url.Values
	pathQ   string            // path and query, as received
	cookie  string            // the Cookie header
	cookies map[string]string // cookie parsed
	dup     map[string]bool   // cookie names sent more than once: never read
	context map[string]string
	reason  *string // the Check span's reason (check.ReasonOf), nil when untraced
	// note collects the user of the answer and reasons that are not
	// failures (check.Note: the same reason as above under check.Wrap).
	note *check.Note
}

func parseRequest(req *authv3.CheckRequest) *request {
	h := req.GetAttributes().GetRequest().GetHttp()
	r := &request{raw: req, method: h.GetMethod(), scheme: h.GetScheme(), host: h.GetHost(), pathQ: h.GetPath(),
		context: req.GetAttributes().GetContextExtensions()}
	if r.scheme == "" {
		r.scheme = "https"
	}
	path, rawQuery, _ := strings.Cut(h.GetPath(), "?")
	r.path = path
	r.query, _ = url.ParseQuery(rawQuery)
	r.cookie, _ = check.RequestHeader(req, "cookie")
	r.cookies, r.dup = parseCookies(r.cookie)
	return r
}

// duplicated reports whether any of names came more than once.
func (r *request) duplicated(names []string) bool {
	for _, n := range names {
		if r.dup[n] {
			return true
		}
	}
	return false
}

func (r *request) header(name string) string {
	v, _ := check.RequestHeader(r.raw, name)
	return v
}

// Check implements authv3.AuthorizationServer.
func (srv *Server) Check(ctx context.Context, req *authv3.CheckRequest) (*authv3.CheckResponse, error) {
	r := parseRequest(req)
	r.reason = check.ReasonOf(ctx)
	r.note = check.NoteFrom(ctx)
	rules, err := parseRouteRules(r.context)
	if err != nil {
		srv.fail(r, failBadRouteContext)
		return nil, err // fail closed: 500
	}
	switch r.path {
	case srv.s.CallbackPath:
		return srv.callback(ctx, r)
	case srv.s.LogoutPath:
		return srv.logout(ctx, r)
	case srv.s.LoginPath:
		target := r.query.Get("rd")
		if target == "" {
			target = "/"
		}
		if err := srv.redirect.check(target); err != nil {
			srv.fail(r, failRedirect)
			return signInFailed(http.StatusBadRequest, "The page to return to after signing in is not allowed: "+err.Error()+".", "/").respond(r)
		}
		return srv.startSignIn(ctx, r, target)
	}

	if token, ok := bearerToken(r.header("authorization")); ok {
		return srv.checkBearer(ctx, r, rules, token)
	}

	sess, cookies, err := srv.currentSession(ctx, r)
	if err != nil || sess == nil {
		return srv.unauthenticated(ctx, r, rules, err)
	}
	claims, err := sess.claims() // decodes: currentSession checked it does
	if err != nil {
		return nil, err
	}
	if srv.unverifiedEmail(claims, rules) {
		return srv.unverifiedSession(r, rules)
	}
	if cookies != nil { // refreshed (currentSession)
		r.note.Reason(eventRefresh)
	} else {
		r.note.Reason(reasonSession)
	}
	return srv.allow(r, rules, claims, cookies, false)
}

// currentSession reads the session cookie and refreshes an expired
// session. It returns the Set-Cookie values to send when the session
// changed; (nil, nil, nil) means no session.
func (srv *Server) currentSession(ctx context.Context, r *request) (*session, []string, error) {
	if r.duplicated(srv.sessNames) {
		srv.fail(r, failDuplicateCookie)
		return nil, nil, errDuplicateCookie
	}
	value, ok := readChunked(r.cookies, srv.s.Cookie.Name)
	if !ok {
		return nil, nil, nil
	}
	plain, err := srv.sealer.open(srv.s.Cookie.Name, value)
	if err != nil {
		srv.fail(r, failSessionInvalid)
		return nil, nil, err
	}
	var sess session
	if err := json.Unmarshal(plain, &sess); err != nil || sess.ID == "" {
		srv.fail(r, failSessionInvalid)
		return nil, nil, errBadCookie
	}
	if _, err := sess.claims(); err != nil {
		srv.fail(r, failSessionInvalid)
		return nil, nil, err
	}
	now := srv.now()
	if !now.Before(time.Unix(sess.Created, 0).Add(srv.s.Cookie.SessionLifetime.Duration)) {
		return nil, nil, errors.New("session lifetime over")
	}
	if now.Before(time.Unix(sess.Expiry, 0)) {
		return &sess, nil, nil
	}
	if sess.Refresh == "" {
		return nil, nil, errors.New("session expired")
	}
	fresh, err := srv.refresh(ctx, &sess)
	if err != nil {
		srv.fail(r, failRefresh)
		srv.log.Info("session refresh failed", "error", err)
		return nil, nil, err
	}
	cookies, err := srv.sessionCookies(r, fresh)
	if err != nil {
		// Too large now (more groups than at sign-in): a new sign-in ends
		// on the callback's error page.
		srv.sessionTooLarge(r, err)
		return nil, nil, err
	}
	return fresh, cookies, nil
}

// unauthenticated answers a request without a usable session: browsers
// are sent to sign in, API clients get 401.
func (srv *Server) unauthenticated(ctx context.Context, r *request, rules *routeRules, cause error) (*authv3.CheckResponse, error) {
	if srv.isAPIClient(r, rules) {
		if cause != nil { // a session that no longer serves
			r.note.ReasonIfNone(reasonSessionExpired)
			return srv.challenge("invalid_token")
		}
		r.note.Reason(check.ReasonNoCredentials)
		return srv.challenge("")
	}
	// Return to the page after sign-in, unless the callback would refuse
	// it (then the user could never sign in from here): "/" instead.
	returnTo := r.pathQ
	if srv.redirect.check(returnTo) != nil {
		returnTo = "/"
	}
	return srv.startSignIn(ctx, r, returnTo)
}

// unverifiedSession refuses a signed-in browser whose address the
// provider has not verified (403). The session is cleared, so that "Sign
// in again" signs in anew (after verifying the address, or as someone
// else) instead of meeting the same refusal.
func (srv *Server) unverifiedSession(r *request, rules *routeRules) (*authv3.CheckResponse, error) {
	srv.fail(r, failEmailUnverified)
	cookies := srv.jar.clearChunked(r.cookies, srv.s.Cookie.Name)
	if srv.isAPIClient(r, rules) {
		return withCookies(mustDeny(http.StatusForbidden, unverifiedEmailText), cookies)
	}
	link := r.pathQ
	if srv.redirect.check(link) != nil {
		link = "/"
	}
	resp, err := signInFailed(http.StatusForbidden, "The identity provider says the email address of this account is not verified. Verify it with the provider, then sign in again.", link).respond(r)
	if err != nil {
		return nil, err
	}
	return withCookies(resp, cookies)
}

const unverifiedEmailText = "403 Forbidden: the provider says this account's email address is not verified\n"

// isAPIClient tells API calls (which a redirect to a login page would
// only confuse) from browser navigation.
func (srv *Server) isAPIClient(r *request, rules *routeRules) bool {
	if rules.api || (r.method != http.MethodGet && r.method != http.MethodHead) {
		return true
	}
	if strings.EqualFold(r.header("x-requested-with"), "XMLHttpRequest") {
		return true
	}
	accept := strings.ToLower(r.header("accept"))
	return strings.Contains(accept, "application/json") && !strings.Contains(accept, "text/html")
}

func (srv *Server) challenge(errCode string) (*authv3.CheckResponse, error) {
	c := fmt.Sprintf("Bearer realm=%q", srv.s.ClientID)
	if errCode != "" {
		c += fmt.Sprintf(", error=%q", errCode)
	}
	return check.Unauthorized(c)
}

func (srv *Server) oauth2Config(r *request, d *discovered) *oauth2.Config {
	redirect := srv.s.RedirectURL
	if redirect == "" {
		redirect = r.scheme + "://" + r.host + srv.s.CallbackPath
	}
	return &oauth2.Config{
		ClientID:     srv.s.ClientID,
		ClientSecret: srv.s.ClientSecret,
		Endpoint:     d.endpoint,
		RedirectURL:  redirect,
		Scopes:       srv.s.Scopes,
	}
}

// sessionCookies seals sess into Set-Cookie values, or returns a
// *sessionTooLargeError when it needs more than maxChunks cookies.
func (srv *Server) sessionCookies(r *request, sess *session) ([]string, error) {
	plain, err := json.Marshal(sess)
	if err != nil {
		return nil, err
	}
	sealed := srv.sealer.seal(srv.s.Cookie.Name, plain)
	if len(sealed) > maxSessionBytes {
		claims, _ := sess.claims()
		return nil, &sessionTooLargeError{size: len(sealed), claims: claims}
	}
	maxAge := time.Unix(sess.Created, 0).Add(srv.s.Cookie.SessionLifetime.Duration).Sub(srv.now())
	return srv.jar.writeChunked(r.cookies, srv.s.Cookie.Name, sealed, maxAge)
}

// maxSessionBytes is the longest sealed session the cookies can carry.
const maxSessionBytes = maxChunk * maxChunks

// sessionTooLargeError is a session that does not fit in maxChunks
// cookies.
type sessionTooLargeError struct {
	size   int            // sealed, base64
	claims map[string]any // to name the largest in the log, never their values
}

func (e *sessionTooLargeError) Error() string {
	return fmt.Sprintf("session of %d bytes does not fit in %d cookies (%d bytes)", e.size, maxChunks, maxSessionBytes)
}

// sessionTooLarge reports whether err is a *sessionTooLargeError, and then
// counts and logs it: sizes and claim names, never a value.
func (srv *Server) sessionTooLarge(r *request, err error) bool {
	var e *sessionTooLargeError
	if !errors.As(err, &e) {
		return false
	}
	srv.fail(r, failSessionTooLarge)
	srv.log.Warn("sign-in refused: the session does not fit in cookies; drop claims with session.claims",
		"reason", failSessionTooLarge, "host", r.host, "sessionBytes", e.size, "limitBytes", maxSessionBytes,
		"claims", len(e.claims), "largestClaims", largestClaims(e.claims, 3))
	return true
}

// largestClaims names the n largest claims with their JSON sizes
// ("groups=21034 bytes, name=12 bytes").
func largestClaims(claims map[string]any, n int) string {
	type sized struct {
		name string
		size int
	}
	var all []sized
	for k, v := range claims {
		b, _ := json.Marshal(v)
		all = append(all, sized{k, len(b)})
	}
	slices.SortFunc(all, func(a, b sized) int { return cmp.Or(b.size-a.size, strings.Compare(a.name, b.name)) })
	var parts []string
	for _, c := range all[:min(n, len(all))] {
		parts = append(parts, fmt.Sprintf("%s=%d bytes", c.name, c.size))
	}
	return strings.Join(parts, ", ")
}

// tooLargePageHTML is what a user whose session does not fit sees: the
// sign-in at the provider worked, but this site cannot keep it.
const tooLargePageHTML = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width"><title>Sign-in failed</title></head>
<body>
<h1>Sign-in failed: your account information is too large</h1>
<p>The identity provider signed you in, but what it says about your account
(for example, a very long list of groups) is too large for this site's
session cookie. Trying again will not help: please tell the site's
administrator.</p>
<p>Administrators: the auth server logged the sizes (session too large);
the <code>session.claims</code> setting keeps only the claims the site uses.</p>
</body>
</html>
`

// tooLargePage answers 500: the server cannot hold this user's session,
// which only its configuration (or the provider's) can fix.
func tooLargePage() (*authv3.CheckResponse, error) {
	return check.Respond(http.StatusInternalServerError, tooLargePageHTML,
		check.Header{Name: "Content-Type", Value: "text/html; charset=utf-8"},
		check.Header{Name: "Cache-Control", Value: "no-store"},
		check.Header{Name: "Content-Security-Policy", Value: "default-src 'none'; frame-ancestors 'none'"},
		check.Header{Name: "X-Frame-Options", Value: "DENY"})
}

// logout clears the session and signs out at the provider when it can.
// Only a same-origin POST does: a GET (a link, an image, a top-level
// navigation from another site) gets a page whose button POSTs.
func (srv *Server) logout(ctx context.Context, r *request) (*authv3.CheckResponse, error) {
	target := r.query.Get("rd")
	if target != "" {
		if err := srv.redirect.check(target); err != nil {
			srv.fail(r, failRedirect)
			return errorPage{status: http.StatusBadRequest, title: "Sign-out failed",
				message: "The page to return to after signing out is not allowed: " + err.Error() + ".", linkText: "Back to the site"}.respond(r)
		}
	}
	switch r.method {
	case http.MethodGet, http.MethodHead:
		return logoutPage(srv.s.LogoutPath, target)
	case http.MethodPost:
	default:
		return check.DenyWithHeaders(http.StatusMethodNotAllowed, "405 Method Not Allowed: sign out with POST\n",
			check.Header{Name: "Allow", Value: "GET, HEAD, POST"})
	}
	if err := sameOrigin(r); err != nil {
		srv.fail(r, failLogoutOrigin)
		srv.log.Info("sign-out refused", "reason", err.Error(), "host", r.host)
		return errorPage{status: http.StatusForbidden, title: "Sign-out refused", message: "Sign-out must come from this site's own page.",
			link: srv.s.LogoutPath, linkText: "Sign out from this site's page"}.respond(r)
	}
	cookies := srv.jar.clearChunked(r.cookies, srv.s.Cookie.Name)
	for _, n := range srv.flowCookies(r) { // sign-ins in progress end too
		cookies = append(cookies, srv.jar.clear(n))
	}
	location, err := srv.logoutLocation(ctx, r, target)
	if err != nil {
		return nil, err
	}
	resp, err := check.Redirect(location)
	if err != nil {
		return nil, err
	}
	srv.event(r, eventLogout)
	return withCookies(resp, cookies)
}

// logoutLocation is where a sign-out goes: the provider's end-session
// endpoint when it has one, naming this client; else target, else
// postLogoutRedirectURL, else "/".
func (srv *Server) logoutLocation(ctx context.Context, r *request, target string) (string, error) {
	location := cmp.Or(target, srv.s.PostLogoutRedirectURL, "/")
	d, err := srv.disc.get(ctx)
	if err != nil || d.endSession == "" {
		return location, nil
	}
	u, err := url.Parse(d.endSession)
	if err != nil {
		return "", err
	}
	q := u.Query()
	q.Set("client_id", srv.s.ClientID)
	if hint := srv.logoutIDTokenHint(r); hint != "" {
		q.Set("id_token_hint", hint)
	}
	if srv.s.PostLogoutRedirectURL != "" {
		q.Set("post_logout_redirect_uri", srv.s.PostLogoutRedirectURL)
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// logoutIDTokenHint is the session's raw ID token when logoutIDTokenHint
// is set (a URL is no place for it otherwise), "" when there is none.
func (srv *Server) logoutIDTokenHint(r *request) string {
	value, ok := readChunked(r.cookies, srv.s.Cookie.Name)
	if !ok || !srv.s.LogoutIDTokenHint || r.duplicated(srv.sessNames) {
		return ""
	}
	plain, err := srv.sealer.open(srv.s.Cookie.Name, value)
	var sess session
	if err != nil || json.Unmarshal(plain, &sess) != nil {
		return ""
	}
	return sess.IDToken
}

// logoutPageHTML is the page at the logout path: one button that POSTs
// there. No script, so nothing submits it without a click.
const logoutPageHTML = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width"><title>Sign out</title></head>
<body>
<form method="post" action="%s"><button type="submit">Sign out</button></form>
</body>
</html>
`

func logoutPage(logoutPath, target string) (*authv3.CheckResponse, error) {
	action := logoutPath
	if target != "" {
		action += "?rd=" + url.QueryEscape(target)
	}
	return check.Respond(http.StatusOK, fmt.Sprintf(logoutPageHTML, html.EscapeString(action)),
		check.Header{Name: "Content-Type", Value: "text/html; charset=utf-8"},
		check.Header{Name: "Cache-Control", Value: "no-store"},
		// No framing: another site must not overlay the button and steal
		// the click. form-action stays open: the POST redirects to the
		// provider, which form-action 'self' would block.
		check.Header{Name: "Content-Security-Policy", Value: "default-src 'none'; frame-ancestors 'none'"},
		check.Header{Name: "X-Frame-Options", Value: "DENY"})
}

// sameOrigin accepts a request that this site's own page sent: by the
// browser's Sec-Fetch-Site when there is one, else by Origin equal to the
// request's own scheme and host. Anything else (another site, a sibling
// subdomain, a client that says nothing) is refused.
func sameOrigin(r *request) error {
	if site := r.header("sec-fetch-site"); site != "" {
		if site == "same-origin" || site == "none" { // none: the user's own action (address bar, bookmark)
			return nil
		}
		return fmt.Errorf("Sec-Fetch-Site is %q", site)
	}
	origin := r.header("origin")
	if origin == "" {
		return errors.New("no Sec-Fetch-Site and no Origin header")
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return fmt.Errorf("the Origin header %q is not an origin", origin)
	}
	if !strings.EqualFold(u.Scheme, r.scheme) {
		return fmt.Errorf("the Origin header %q is not this site's scheme %s", origin, r.scheme)
	}
	if !sameHost(u, r) {
		return fmt.Errorf("the Origin header %q is not this host %s", origin, r.host)
	}
	return nil
}

// sameHost tells whether the origin u is the request's host and port.
func sameHost(u *url.URL, r *request) bool {
	host, port, err := net.SplitHostPort(r.host)
	if err != nil {
		// No port: Envoy strips it from the host it reports (Portcullis
		// listeners strip any port), so the Origin's port cannot be
		// compared. Another port of the same host shares its cookies anyway.
		return strings.EqualFold(u.Hostname(), strings.Trim(r.host, "[]"))
	}
	return strings.EqualFold(u.Hostname(), host) && portOr(u.Port(), u.Scheme) == portOr(port, r.scheme)
}

// portOr is port, or the default port of scheme when port is empty.
func portOr(port, scheme string) string {
	if port != "" {
		return port
	}
	if strings.EqualFold(scheme, "http") {
		return "80"
	}
	return "443"
}

func bearerToken(authz string) (string, bool) {
	scheme, token, ok := strings.Cut(authz, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// checkBearer validates a JWT access token: signature against the
// provider's keys, issuer, audience, expiry, algorithm. Never a redirect.
func (srv *Server) checkBearer(ctx context.Context, r *request, rules *routeRules, token string) (*authv3.CheckResponse, error) {
	d, err := srv.disc.get(ctx)
	if err != nil {
		srv.fail(r, failDiscovery)
		return nil, err
	}
	if d.bearer == nil {
		srv.fail(r, failBearer)
		return srv.challenge("invalid_token")
	}
	claims, err := srv.verifyBearer(ctx, d, token)
	if err != nil {
		reason := failBearer
		if errors.Is(err, errNotAccessToken) {
			reason = failJWTNotAccess
		}
		srv.fail(r, reason)
		srv.log.Info("bearer token rejected", "reason", reason, "error", err)
		return srv.challenge("invalid_token")
	}
	srv.event(r, eventBearer)
	return srv.allow(r, rules, claims, nil, srv.s.Bearer.StripAuthorization)
}

// verifyBearer verifies token (signature, issuer, expiry, algorithm),
// its audience and its kind, and returns its claims.
func (srv *Server) verifyBearer(ctx context.Context, d *discovered, token string) (map[string]any, error) {
	t, err := d.bearer.Verify(ctx, token)
	if err != nil {
		return nil, err
	}
	if !intersects(t.Audience, srv.s.Bearer.Audiences) {
		return nil, errors.New("audience not accepted")
	}
	var claims map[string]any
	if err := t.Claims(&claims); err != nil {
		return nil, err
	}
	return claims, checkAccessToken(token, claims)
}

// allow authorizes the route and answers OK with the claim headers and,
// when the session changed, its cookies on the response. stripAuthz
// removes the Authorization header (the bearer token just checked).
func (srv *Server) allow(r *request, rules *routeRules, claims map[string]any, cookies []string, stripAuthz bool) (*authv3.CheckResponse, error) {
	if srv.unverifiedEmail(claims, rules) {
		// Some providers let users set any address: an unverified one
		// must not become an identity the upstream trusts.
		srv.fail(r, failEmailUnverified)
		return withCookies(mustDeny(http.StatusForbidden, unverifiedEmailText), cookies)
	}
	if !rules.permits(claims, srv.s.GroupsClaim) {
		srv.fail(r, failForbidden)
		resp, err := check.Deny(http.StatusForbidden, "403 Forbidden\n")
		if err != nil {
			return nil, err
		}
		return withCookies(resp, cookies)
	}
	var headers []check.Header
	// A header we have no claim for is not set, but a client's copy of it
	// must not reach the upstream either.
	var unset []string
	if stripAuthz {
		unset = append(unset, "Authorization")
	}
	for _, hm := range srv.s.Headers {
		if v, ok := claimString(claims[hm.Claim]); ok {
			headers = append(headers, check.Header{Name: hm.Name, Value: v})
		} else {
			unset = append(unset, hm.Name)
		}
	}
	// The upstream gets the request's cookies without ours: the session
	// (refresh token included, if encrypted) is none of its business.
	cookieHeader, stripped := srv.withoutOwnCookies(r.cookie)
	if stripped && cookieHeader != "" {
		headers = append(headers, check.Header{Name: "Cookie", Value: cookieHeader})
	} else if stripped {
		unset = append(unset, "Cookie")
	}
	resp, err := check.AllowRemoving(r.raw, headers, unset)
	if err != nil {
		return nil, err
	}
	if sub, ok := claimString(claims["sub"]); ok {
		r.note.User(sub)
	}
	return withCookies(resp, cookies)
}

// withCookies adds Set-Cookie values to a response sent to the client:
// the denial itself, or (allowed) the upstream's response.
func withCookies(resp *authv3.CheckResponse, cookies []string) (*authv3.CheckResponse, error) {
	for _, c := range cookies {
		if !check.ValidHeaderValue(c) {
			return nil, errors.New("invalid Set-Cookie value")
		}
		h := &corev3.HeaderValueOption{
			Header: &corev3.HeaderValue{Key: "Set-Cookie", Value: c},
			// Each cookie is its own header line.
			AppendAction: corev3.HeaderValueOption_APPEND_IF_EXISTS_OR_ADD,
		}
		if d := resp.GetDeniedResponse(); d != nil {
			d.Headers = append(d.Headers, h)
		} else if ok := resp.GetOkResponse(); ok != nil {
			ok.ResponseHeadersToAdd = append(ok.ResponseHeadersToAdd, h)
		}
	}
	return resp, nil
}

// withoutOwnCookies removes the session cookie, its chunks and the state
// cookies from a Cookie header; stripped reports whether there were any.
func (srv *Server) withoutOwnCookies(header string) (rest string, stripped bool) {
	if header == "" {
		return "", false
	}
	var keep []string
	for _, part := range strings.Split(header, ";") {
		part = strings.TrimSpace(part)
		name, _, _ := strings.Cut(part, "=")
		if name = strings.TrimSpace(name); srv.ownCookies[name] || srv.isFlowCookie(name) {
			stripped = true
			continue
		}
		if part != "" {
			keep = append(keep, part)
		}
	}
	return strings.Join(keep, "; "), stripped
}

func intersects(a, b []string) bool {
	for _, x := range a {
		for _, y := range b {
			if x == y {
				return true
			}
		}
	}
	return false
}

func randomString() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// expiringSet remembers values until they expire (used states).
type expiringSet struct {
	mu      sync.Mutex
	m       map[string]time.Time
	pruneAt int // size at which the next pass drops expired values
	scans   int // pruning passes (tests)
}

func newExpiringSet() *expiringSet { return &expiringSet{m: map[string]time.Time{}} }

// add records v until exp; false when v was already there.
func (s *expiringSet) add(v string, exp, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	// A pass costs len(m): run one only when m has doubled since the last,
	// so that many live values do not make every add scan them all.
	if len(s.m) >= max(s.pruneAt, 1024) {
		s.scans++
		for k, e := range s.m {
			if now.After(e) {
				delete(s.m, k)
			}
		}
		s.pruneAt = 2 * len(s.m)
	}
	if e, ok := s.m[v]; ok && now.Before(e) {
		return false
	}
	s.m[v] = exp
	return true
}

// unverifiedEmail reports whether an address the provider says is not
// verified (email_verified: false) would be used: the token has an email
// claim and a header is made from it or the route's rule reads it. A
// token without an address has nothing to refuse (Keycloak's
// service-account tokens say email_verified: false and carry no email).
// Providers that send no email_verified are trusted, as their addresses
// are their own. allowUnverifiedEmail turns the check off.
func (srv *Server) unverifiedEmail(claims map[string]any, rules *routeRules) bool {
	if srv.s.AllowUnverifiedEmail {
		return false
	}
	if v, ok := claims["email_verified"].(bool); !ok || v {
		return false
	}
	if _, ok := claimString(claims["email"]); !ok {
		return false
	}
	if _, ok := rules.claims["email"]; ok {
		return true
	}
	for _, h := range srv.s.Headers {
		if h.Claim == "email" {
			return true
		}
	}
	return false
}

// mustDeny is check.Deny for a constant body, which cannot fail.
func mustDeny(code int, body string) *authv3.CheckResponse {
	resp, err := check.Deny(code, body)
	if err != nil {
		panic(err)
	}
	return resp
}
