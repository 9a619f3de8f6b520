// Package guard checks that an extension's answer only adds: the
// invariant every answer of every hook is held to, under both dialects.
//
// The invariant: the set of requests that reach one of Portcullis's
// clusters without passing each protecting filter configured for them
// must not grow. Protecting filters are those of the kinds in
// protectingTypes (ext_authz, ext_proc, RBAC, JWT, rate limits, CORS,
// basic auth, OAuth2), whatever their names, with their per-route settings
// (typed_per_filter_config); a listener's TLS (its transport socket and
// listener filters) and the connection manager's settings that decide
// which route a request takes (path normalization, host matching, client
// address detection) protect too.
//
// It is checked structurally and conservatively, never by names alone:
//
//   - a filter chain corresponds to the one before it on the same address
//     with the same filter_chain_match (renaming a listener or a chain
//     changes nothing); it keeps each protecting filter, with the same
//     configuration, before the router, its transport socket and the
//     routing settings; a chain with no counterpart may not send to
//     Portcullis's clusters;
//   - a route that sends to Portcullis's clusters (directly, weighted, by
//     header) is at least as protected as every route before it whose
//     requests it may now serve: its own former self, the routes it now
//     precedes whose matches intersect its own, and, where a virtual
//     host's domains changed, the routes of the virtual host that served
//     those hosts before. A route that answered itself (a redirect, a
//     direct response) may not be replaced by one that reaches an
//     upstream;
//   - at least as protected: per protecting filter, the same effective
//     setting (route, else virtual host, else route configuration, else
//     the filter's own), or the former one was off.
//
// Over-approximations (a regex match intersects everything, header and
// query conditions are ignored) can only refuse more.
package guard

import (
	"fmt"
)

// Violation is one way an answer widens access, about one resource.
type Violation struct {
	// TypeURL and Name are the resource's (a Listener, a
	// RouteConfiguration, a Cluster).
	TypeURL, Name string
	// Reason says what the answer does, and where.
	Reason string
}

func (v Violation) Error() string { return fmt.Sprintf("%s %q: %s", kind(v.TypeURL), v.Name, v.Reason) }

func kind(typeURL string) string {
	for i := len(typeURL) - 1; i >= 0; i-- {
		if typeURL[i] == '.' {
			return typeURL[i+1:]
		}
	}
	return typeURL
}
