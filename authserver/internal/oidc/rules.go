package oidc

import (
	"fmt"
	"strings"
)

// ContextPrefix starts the check-context keys (HTTPProxy authPolicy.context)
// this backend reads.
const ContextPrefix = "oidc.portcullis.dev/"

// Check-context keys.
const (
	// KeyGroups: comma-separated groups; the user must be in at least one.
	KeyGroups = ContextPrefix + "groups"
	// KeyClaimPrefix + NAME: claim NAME must equal the value (or, for a
	// list claim, contain it).
	KeyClaimPrefix = ContextPrefix + "claim."
	// KeyAPI "true": never redirect to sign in on this route; answer 401.
	KeyAPI = ContextPrefix + "api"
)

// routeRules is the per-route authorization from the check context.
type routeRules struct {
	groups []string
	claims map[string]string
	api    bool
}

// parseRouteRules reads the oidc.portcullis.dev/ keys. An unknown key or
// bad value is an error (the check then fails closed): a typo must not
// turn a requirement into an allow.
func parseRouteRules(ctx map[string]string) (*routeRules, error) {
	r := &routeRules{}
	for k, v := range ctx {
		if !strings.HasPrefix(k, ContextPrefix) {
			continue
		}
		switch {
		case k == KeyGroups:
			for _, g := range strings.Split(v, ",") {
				if g = strings.TrimSpace(g); g != "" {
					r.groups = append(r.groups, g)
				}
			}
			if len(r.groups) == 0 {
				return nil, fmt.Errorf("context %s: no group named", k)
			}
		case strings.HasPrefix(k, KeyClaimPrefix) && len(k) > len(KeyClaimPrefix):
			if r.claims == nil {
				r.claims = map[string]string{}
			}
			r.claims[k[len(KeyClaimPrefix):]] = v
		case k == KeyAPI:
			switch v {
			case "true":
				r.api = true
			case "false":
			default:
				return nil, fmt.Errorf("context %s: %q is not true or false", k, v)
			}
		default:
			return nil, fmt.Errorf("unknown context key %s", k)
		}
	}
	return r, nil
}

// permits reports whether claims satisfy the route's requirements.
func (r *routeRules) permits(claims map[string]any, groupsClaim string) bool {
	if len(r.groups) > 0 {
		found := false
		for _, g := range r.groups {
			found = found || claimHas(claims[groupsClaim], g)
		}
		if !found {
			return false
		}
	}
	for name, want := range r.claims {
		if !claimHas(claims[name], want) {
			return false
		}
	}
	return true
}

// claimHas: a string claim equal to want, or a list claim containing it.
func claimHas(v any, want string) bool {
	switch v := v.(type) {
	case []any:
		for _, e := range v {
			if s, ok := claimString(e); ok && s == want {
				return true
			}
		}
		return false
	default:
		s, ok := claimString(v)
		return ok && s == want
	}
}
