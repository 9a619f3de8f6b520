package oidc

import "github.com/prometheus/client_golang/prometheus"

// Events counted by portcullis_authserver_oidc_events_total.
const (
	eventSignIn   = "sign_in"  // a browser sent to the provider
	eventCallback = "callback" // a sign-in completed (session created)
	eventRefresh  = "refresh"  // a session refreshed with its refresh token
	eventLogout   = "logout"   // a session cleared at the logout path
	eventBearer   = "bearer"   // a bearer token accepted
)

// Reasons counted by portcullis_authserver_oidc_failures_total.
const (
	failProviderError   = "provider_error"          // the provider answered the callback with an error
	failStateMissing    = "state_missing"           // callback without a usable state cookie
	failStateMismatch   = "state_mismatch"          // state parameter does not match the cookie
	failStateReplayed   = "state_replayed"          // a state already used (in this process)
	failExchange        = "exchange"                // code exchange failed
	failIDToken         = "id_token"                // the ID token failed verification
	failNonce           = "nonce"                   // the ID token's nonce is not ours
	failRefresh         = "refresh"                 // refreshing a session failed
	failSessionInvalid  = "session_invalid"         // a session cookie that does not decrypt or parse
	failBearer          = "bearer_invalid"          // a bearer token failed validation
	failJWTNotAccess    = "bearer_not_access_token" // a valid JWT that is not an access token (an ID token)
	failRedirect        = "redirect_refused"        // an unsafe redirect target
	failForbidden       = "forbidden"               // authenticated but not permitted on the route
	failDiscovery       = "discovery"               // the provider could not be discovered
	failBadRouteContext = "route_context"           // an invalid oidc.portcullis.dev/ context key
	failDuplicateCookie = "duplicate_cookie"        // a session or state cookie name sent twice (one may be planted)
	failLogoutOrigin    = "logout_origin"           // a sign-out POST not from this site's own page
	failSessionTooLarge = "session_too_large"       // a session that needs more than maxChunks cookies
	failEmailUnverified = "email_unverified"        // email_verified: false while a header is made from email
)

var (
	allEvents   = []string{eventSignIn, eventCallback, eventRefresh, eventLogout, eventBearer}
	allFailures = []string{failProviderError, failStateMissing, failStateMismatch, failStateReplayed, failExchange,
		failIDToken, failNonce, failRefresh, failSessionInvalid, failBearer, failJWTNotAccess, failRedirect, failForbidden, failDiscovery, failBadRouteContext, failDuplicateCookie, failLogoutOrigin, failSessionTooLarge, failEmailUnverified}
)

type metrics struct {
	events, failures *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "portcullis_authserver_oidc_events_total",
			Help: "OIDC events: sign_in (sent to the provider), callback (signed in), refresh, logout, bearer (token accepted).",
		}, []string{"event"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "portcullis_authserver_oidc_failures_total",
			Help: "OIDC failures by reason.",
		}, []string{"reason"}),
	}
	for _, c := range []prometheus.Collector{m.events, m.failures} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	for _, e := range allEvents {
		m.events.WithLabelValues(e)
	}
	for _, r := range allFailures {
		m.failures.WithLabelValues(r)
	}
	return m, nil
}

// The reasons of allowed answers that are not events (check.Note): a
// valid session cookie; and of a denial, a session past its expiry or
// lifetime that cannot be refreshed.
const (
	reasonSession        = "session"
	reasonSessionExpired = "session_expired"
)

func (m *metrics) event(e string)   { m.events.WithLabelValues(e).Inc() }
func (m *metrics) failure(r string) { m.failures.WithLabelValues(r).Inc() }

// event counts an event and names it as the reason of r's answer (the
// Check span's and the access log's), in the words the metrics count.
func (srv *Server) event(r *request, e string) {
	srv.m.event(e)
	r.note.Reason(e)
}

// fail counts a failure and names it as the reason on the Check span of r.
func (srv *Server) fail(r *request, reason string) {
	srv.m.failure(reason)
	if r.reason != nil {
		*r.reason = reason
	}
}
