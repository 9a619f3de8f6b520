package oidc

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"
	"time"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"golang.org/x/oauth2"

	"github.com/portcullis/portcullis/authserver/internal/check"
)

// stateLifetime is how long a sign-in may take, from the redirect to the
// provider to the callback.
const stateLifetime = 10 * time.Minute

// Each sign-in in progress has its own state cookie, named after its
// state (as oauth2-proxy names its CSRF cookies), so that two tabs
// signing in at once do not overwrite each other's. These bound them.
const (
	// maxFlows is how many sign-ins a browser may have in progress; a new
	// one pushes out the oldest beyond it.
	maxFlows = 5
	// maxFlowScan is how many state cookies a request is read for: more
	// were not set by us.
	maxFlowScan = 2 * maxFlows
	// maxFlowCookieBytes bounds a state cookie's value (browsers keep
	// about 4 KB per cookie anyway).
	maxFlowCookieBytes = 4096
	// maxReturnBytes bounds the URL a sign-in returns to, so that its
	// state cookie fits; a longer one returns to "/".
	maxReturnBytes = 2048
)

// flowState is the sealed content of a state cookie.
type flowState struct {
	State    string `json:"s"`
	Nonce    string `json:"n"`
	Verifier string `json:"v"`
	Return   string `json:"r"`
	Expiry   int64  `json:"e"`
}

// flowCookie names the state cookie of the sign-in with this state: the
// prefix and 16 characters of the state's SHA-256, so the callback finds
// its own cookie from the state the provider sends back.
func (srv *Server) flowCookie(state string) string {
	sum := sha256.Sum256([]byte(state))
	return srv.flowPrefix + base64.RawURLEncoding.EncodeToString(sum[:12])
}

// isFlowCookie reports whether name is a state cookie of ours (a flow's,
// or the single one of earlier versions).
func (srv *Server) isFlowCookie(name string) bool {
	return strings.HasPrefix(name, srv.flowPrefix) || name == srv.legacyState
}

// flowCookies lists the state cookies the request carries, sorted, at
// most maxFlowScan of them.
func (srv *Server) flowCookies(r *request) []string {
	var names []string
	for n := range r.cookies {
		if srv.isFlowCookie(n) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names[:min(len(names), maxFlowScan)]
}

// openFlow reads the state cookie name; ok is false when it does not
// decrypt or decode (expiry is not checked here).
func (srv *Server) openFlow(name, value string) (fs flowState, ok bool) {
	if len(value) > maxFlowCookieBytes {
		return fs, false
	}
	plain, err := srv.sealer.open(name, value)
	if err != nil || json.Unmarshal(plain, &fs) != nil {
		return fs, false
	}
	return fs, true
}

// evictFlows returns the Set-Cookie values that make room for a new
// sign-in: the request's state cookies that are expired, unreadable,
// duplicated or of the old single-cookie form, and the oldest live ones
// beyond maxFlows-1.
func (srv *Server) evictFlows(r *request) []string {
	type live struct {
		name   string
		expiry int64
	}
	var keep []live
	var out []string
	now := srv.now().Unix()
	for _, n := range srv.flowCookies(r) {
		fs, ok := srv.openFlow(n, r.cookies[n])
		if !ok || now > fs.Expiry || r.dup[n] || n == srv.legacyState {
			out = append(out, srv.jar.clear(n))
			continue
		}
		keep = append(keep, live{n, fs.Expiry})
	}
	slices.SortFunc(keep, func(a, b live) int { return cmp.Compare(b.expiry, a.expiry) }) // newest first
	for _, c := range keep[min(len(keep), maxFlows-1):] {
		out = append(out, srv.jar.clear(c.name))
	}
	return out
}

// startSignIn answers 302 to the provider's authorization endpoint with a
// fresh state, nonce and PKCE verifier sealed in the sign-in's own state
// cookie. Other sign-ins in progress keep theirs (up to maxFlows).
func (srv *Server) startSignIn(ctx context.Context, r *request, returnTo string) (*authv3.CheckResponse, error) {
	d, err := srv.disc.get(ctx)
	if err != nil {
		srv.fail(r, failDiscovery)
		return nil, err
	}
	if len(returnTo) > maxReturnBytes {
		returnTo = "/"
	}
	fs := flowState{State: randomString(), Nonce: randomString(), Verifier: oauth2.GenerateVerifier(),
		Return: returnTo, Expiry: srv.now().Add(stateLifetime).Unix()}
	plain, _ := json.Marshal(fs)
	location := srv.oauth2Config(r, d).AuthCodeURL(fs.State,
		oauth2.SetAuthURLParam("nonce", fs.Nonce), oauth2.S256ChallengeOption(fs.Verifier))
	resp, err := check.Redirect(location)
	if err != nil {
		return nil, err
	}
	// A new sign-in replaces whatever session the browser had.
	cookies := append(srv.jar.clearChunked(r.cookies, srv.s.Cookie.Name), srv.evictFlows(r)...)
	name := srv.flowCookie(fs.State)
	cookies = append(cookies, srv.jar.set(name, srv.sealer.seal(name, plain), stateLifetime))
	srv.event(r, eventSignIn)
	return withCookies(resp, cookies)
}

// flowProblem is why a callback has no usable sign-in state.
type flowProblem int

const (
	flowOK flowProblem = iota
	flowDuplicate
	flowUnknown // no state cookie for this state: never started here, finished, or gone
	flowUnreadable
	flowExpired // readable: its original URL is known
	flowMismatch
)

// callbackFlow finds the state cookie of the callback's state and opens it.
func (srv *Server) callbackFlow(r *request, name, state string) (flowState, flowProblem) {
	if r.dup[name] {
		// Maybe ours and a planted one: refuse rather than guess (login CSRF).
		return flowState{}, flowDuplicate
	}
	value, ok := r.cookies[name]
	if !ok || state == "" {
		return flowState{}, flowUnknown
	}
	fs, ok := srv.openFlow(name, value)
	switch {
	case !ok:
		return fs, flowUnreadable
	case srv.now().Unix() > fs.Expiry:
		return fs, flowExpired
	case subtle.ConstantTimeCompare([]byte(fs.State), []byte(state)) != 1:
		return fs, flowMismatch
	}
	return fs, flowOK
}
