package httpproxy

import (
	"regexp"
	"slices"
	"strings"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// An HTTPProxy's wildcard fqdn ("*.example.com") serves the host names
// with exactly one more label in the wildcard's place, as Contour's: Envoy's
// domain wildcard "*.example.com" also matches b.c.example.com, so every
// route of the host also matches the :authority header against one DNS
// label and the rest of the name. A request for b.c.example.com finds the
// virtual host and no route: 404, as on Contour. Host names compare
// case-insensitively, as Envoy's domains (the HCM strips the port before
// routing).

// wildcardLabel is one DNS label (RFC 1123), the one a wildcard stands for.
const wildcardLabel = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"

// isWildcard reports whether fqdn (lowercased) is a "*." wildcard.
func isWildcard(fqdn string) bool { return strings.HasPrefix(fqdn, "*.") }

// WildcardAuthority is the header condition of the routes of wildcard
// host fqdn: the :authority is one label and fqdn's suffix (Envoy matches
// the whole value against the regex).
func WildcardAuthority(fqdn string) ir.HeaderMatch {
	return ir.HeaderMatch{Name: ":authority", Kind: "regex", Value: "(?i)" + wildcardLabel + regexp.QuoteMeta(fqdn[1:])}
}

// WithWildcardAuthority adds wildcardAuthority to each route of a wildcard
// host (routes unchanged for another host). The same condition on every
// route keeps their order (irRoutes).
func WithWildcardAuthority(fqdn string, routes []Route) []Route {
	if !isWildcard(fqdn) {
		return routes
	}
	m := WildcardAuthority(fqdn)
	out := make([]Route, len(routes))
	for i, r := range routes {
		// A new slice: the routes of an HTTPProxy included by several
		// roots share their conditions.
		r.Headers = append(slices.Clip(r.Headers), m)
		out[i] = r
	}
	return out
}
