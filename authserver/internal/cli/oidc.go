package cli

import (
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"

	"github.com/portcullis/portcullis/authserver/internal/oidc"
)

const oidcLong = `Sign users in with OpenID Connect, all through the Check call, and accept
bearer JWTs from API clients.

Browsers without a session get a 302 to the provider's authorization
endpoint (authorization code flow with PKCE S256, state and nonce; the
state lives in a short-lived encrypted cookie). The provider sends them back
to the callback path on the same host; the code is exchanged, the ID token
verified (issuer, audience, expiry, nonce), and the session stored in an
AES-GCM encrypted cookie (HttpOnly, Secure, SameSite=Lax; split into
numbered chunks above 3.8 KB, at most 8), named __Host-portcullis_session unless
cookie.domain or cookie.path rule the __Host- prefix out. A cookie of ours
sent twice in one request is never read (one may be planted). Nothing is kept in memory: replicas sharing
the cookie key serve the same users. Expired sessions with a refresh token
are refreshed transparently (once per session at a time) and the new cookie
is set on the allowed response. A POST to the logout path from this site's
own page (Sec-Fetch-Site same-origin or none, else an Origin equal to the
request's own; anything else is 403) clears the session and uses the
provider's end_session_endpoint when there is one; a GET there shows a page
with a sign-out button. Sessions are not revocable: a copied session cookie
works until cookie.sessionLifetime (default 12h) after sign-in, so keep it
short where that matters. The session holds the ID token's claims once
(the raw ID token); session.claims {keep: [...]} or {drop: [...]} keeps
fewer, for users in many groups. A session that still needs more than 8
cookies gets an error page (500) at the callback, counted as
session_too_large and logged with its size.

API clients get 401 with WWW-Authenticate: Bearer, never a redirect: requests
with Authorization: Bearer (the JWT is validated against the provider's
JWKS, issuer and audience pinned), XHR, Accept: application/json, non-GET
methods, and routes with the context key oidc.portcullis.dev/api: "true".
The Authorization header reaches the upstream unless
bearer.stripAuthorization is true.

Claims become upstream headers (default Auth-Subject from sub, Auth-Username
from email, Auth-Groups from groups); client-supplied copies are removed.

Per-route authorization, from the HTTPProxy authPolicy.context:
  oidc.portcullis.dev/groups: "a,b"     the user must be in group a or b
  oidc.portcullis.dev/claim.NAME: V     claim NAME must be (or contain) V
  oidc.portcullis.dev/api: "true"       401 instead of a sign-in redirect
Authenticated but not permitted: 403. An unknown oidc.portcullis.dev/ key
fails closed (500).

Configuration (--config, YAML, required; secrets only from files or
environment variables): see docs/authserver-oidc.md for every field. The
issuer must be https (allowInsecureIssuer: true accepts http, for a local
test provider only). Minimal example (a file without the "oidc:" key, the
settings alone, is read too):

  oidc:
    issuer: https://login.example.com
    clientID: portcullis
    clientSecretFile: /secrets/client-secret
    allowedRedirectHosts: [app.example.com]
    cookie:
      keyFile: /secrets/cookie-key      # 32 bytes, base64: openssl rand -base64 32
    bearer:
      audiences: [https://api.example.com]

Metrics, besides the shared ones:
  portcullis_authserver_oidc_events_total{event}
      sign_in, callback, refresh, logout, bearer
  portcullis_authserver_oidc_failures_total{reason}
      provider_error, state_missing, state_mismatch, state_replayed,
      exchange, id_token, nonce, refresh, session_invalid, bearer_invalid,
      redirect_refused, forbidden, discovery, route_context, duplicate_cookie,
      logout_origin, session_too_large`

var oidcBackend = backendSpec[oidc.Config]{
	name:  oidc.Name,
	short: "OpenID Connect sign-in with encrypted cookie sessions, refresh, logout and bearer JWTs",
	long:  oidcLong,
	example: `  OIDC_CLIENT_SECRET=... authserver oidc --config oidc.yaml \
    --address :9443 --metrics-address :9090 \
    --tls-cert-path tls.crt --tls-key-path tls.key --tls-ca-path ca.crt`,
	defaults:      func() oidc.Config { return oidc.Config{} },
	requireConfig: true,
	flatConfig:    true, // the file's shape before every backend took --config
	build: func(c oidc.Config, e env) (authv3.AuthorizationServer, error) {
		settings, err := c.Load()
		if err != nil {
			return nil, err
		}
		srv, err := oidc.New(settings, e.logger, e.registry, oidc.WithTracerProvider(e.tracing))
		if err != nil {
			return nil, err
		}
		// Reported, not fatal: Check retries discovery.
		if err := srv.Discover(e.ctx); err != nil {
			e.logger.Warn("OpenID Provider discovery failed; retrying on demand", "error", err)
		}
		return srv, nil
	},
}
