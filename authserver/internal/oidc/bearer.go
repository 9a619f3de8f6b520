package oidc

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// errNotAccessToken marks a verified JWT refused for its kind, not its
// validity (counted as bearer_not_access_token).
var errNotAccessToken = errors.New("not an access token")

// accessTokenTypes are the JOSE typ values an access token may carry
// (RFC 9068 at+jwt, and the generic JWT most providers write); any other
// declared type (logout+jwt, secevent+jwt, ...) is another kind of token.
var accessTokenTypes = map[string]bool{"": true, "jwt": true, "at+jwt": true, "application/at+jwt": true}

// checkAccessToken refuses a verified JWT that says, or is shaped like,
// something other than an access token: an ID token is for the client
// that signed in, travels where access tokens do not (URLs, the
// browser), and must not open an API. The rule:
//
//   - the JOSE header's typ, when set, is JWT or at+jwt;
//   - a typ claim, when set, is Bearer (Keycloak writes ID, Refresh and
//     Logout in its other tokens); it then decides alone, since Keycloak
//     before 24 also put the nonce in access tokens;
//   - without a typ claim, a nonce marks an ID token: OpenID Connect puts
//     the sign-in's nonce in ID tokens only. (at_hash is not used: Dex
//     puts it in its access tokens.)
func checkAccessToken(raw string, claims map[string]any) error {
	typ, err := joseType(raw)
	if err != nil {
		return err
	}
	if !accessTokenTypes[strings.ToLower(typ)] {
		return fmt.Errorf("%w: JOSE typ %q", errNotAccessToken, typ)
	}
	if v, ok := claims["typ"]; ok {
		if s, _ := v.(string); !strings.EqualFold(s, "Bearer") {
			return fmt.Errorf("%w: typ claim %v", errNotAccessToken, v)
		}
		return nil
	}
	if _, ok := claims["nonce"]; ok {
		return fmt.Errorf("%w: it has a nonce (an ID token)", errNotAccessToken)
	}
	return nil
}

// joseType reads the typ of a compact JWS's header (verified by then).
func joseType(raw string) (string, error) {
	h, _, _ := strings.Cut(raw, ".")
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(h, "="))
	if err != nil {
		return "", fmt.Errorf("JOSE header: %w", err)
	}
	var header struct {
		Typ string `json:"typ"`
	}
	if err := json.Unmarshal(b, &header); err != nil {
		return "", fmt.Errorf("JOSE header: %w", err)
	}
	return header.Typ, nil
}
