package httpproxy

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// Route is a route under construction: its match accumulates the
// conditions of every include on the way from the root.
type Route struct {
	ir.Route
	permitInsecure bool
}

// routeErrors collects the errors of one route: each names where the route
// is, and any makes the route invalid.
type routeErrors struct {
	st      *status.Object
	where   string
	invalid bool
}

func (e *routeErrors) add(typ, reason, format string, args ...any) {
	e.st.AddError(typ, reason, e.where+": "+fmt.Sprintf(format, args...))
	e.invalid = true
}

// warn adds a warning about the route, which stays valid.
func (e *routeErrors) warn(typ, reason, format string, args ...any) {
	e.st.AddWarning(typ, reason, e.where+": "+fmt.Sprintf(format, args...))
}

// buildRoute builds route i of p under the match and authorization
// inherited from the includes; false when it is invalid.
func (b *rootBuilder) buildRoute(p *contourv1.HTTPProxy, i int, r *contourv1.Route, parent *Route, scope authScope, st *status.Object) (Route, bool) {
	where := routePlaces.at(i)
	rt, ok := mergeConditions(parent, r.Conditions, where, contourv1.ConditionTypeRouteError, st)
	if !ok {
		return rt, false
	}
	rt.permitInsecure = r.PermitInsecure
	errs := &routeErrors{st: st, where: where}
	if len(rt.Headers) > 0 {
		if err := headerConditionsValid(rt.Headers); err != nil {
			errs.add(contourv1.ConditionTypeRouteError, status.ReasonHeaderMatchConditionsNotValid, "%v", err)
		}
	}
	if err := queryParamConditionsValid(rt.QueryParams); err != nil {
		errs.add(contourv1.ConditionTypeRouteError, status.ReasonQueryParameterMatchConditionsNotValid, "%v", err)
	}
	routeAuth(&rt, r, scope, errs)
	rt.ExtProc = b.routeExtProc(p, r, scope.proc, errs.add)
	b.warnGlobalUnavailable(rt.Route, scope, st)
	routeIPFilter(&rt, r, scope.ipFilter, errs)
	routeRateLimit(&rt, r, errs)
	routeJWT(&rt, r, scope.jwt, errs)
	b.routeGlobalRateLimits(&rt, r, st, errs)
	if answered(r) {
		routeAnswer(&rt, r, errs)
		if rt.DirectResponse != nil {
			routeHeaders(&rt, r, errs)
		}
		return rt, !errs.invalid
	}
	cs := core.ClusterSettings{Lb: routeLoadBalancer(&rt, r.LoadBalancerPolicy, errs), Idle: idleConnection(r.TimeoutPolicy, errs)}
	var err error
	if cs.HealthCheck, err = core.HTTPHealthCheck(r.HealthCheckPolicy); err != nil {
		errs.add(contourv1.ConditionTypeRouteError, status.ReasonHealthCheckPolicyInvalid, "HealthCheckPolicy: %v", err)
	}
	rt.Clusters, rt.Mirrors = b.routeServices(p, r.Services, cs, errs)
	routeCookieRewrites(&rt, r.CookieRewritePolicies, errs)
	routeHeaders(&rt, r, errs)
	routeTimeouts(&rt, r.TimeoutPolicy, errs)
	routePathRewrite(&rt, r, errs)
	routeRetry(&rt, r.RetryPolicy, errs)
	rt.Websocket = r.EnableWebsockets
	routeInternalRedirect(&rt, r.InternalRedirectPolicy, errs)
	return rt, !errs.invalid
}

// routeHeaders validates the route's own headers policies (with Contour's
// types and reasons, the response one spelt ResponseHeaderPolicyInvalid).
func routeHeaders(rt *Route, r *contourv1.Route, errs *routeErrors) {
	var err error
	if rt.RequestHeaders, err = core.HeadersPolicy(r.RequestHeadersPolicy, true); err != nil {
		errs.add(contourv1.ConditionTypeRouteError, status.ReasonRequestHeadersPolicyInvalid, "RequestHeadersPolicy: %v", err)
	}
	if rt.ResponseHeaders, err = core.HeadersPolicy(r.ResponseHeadersPolicy, false); err != nil {
		errs.add(contourv1.ConditionTypeRouteError, status.ReasonResponseHeaderPolicyInvalid, "ResponseHeadersPolicy: %v", err)
	}
}

// irRoutes orders routes the way Envoy must try them, as Contour does:
// exact paths first, then regexes, then prefixes; longer paths first; then
// more header conditions, then more query parameter conditions; ties keep
// their order. Of routes with the same match (the same path, and the same
// header and query parameter conditions in the same order), only the last
// is kept, as in Contour, whose virtual host keeps one route per match: a
// later route, or one of a later include, replaces an earlier one.
// For the HTTP listener of a TLS host (insecure), routes that do not permit
// insecure access become redirects to HTTPS.
func irRoutes(routes []Route, insecure bool) []*ir.Route {
	// One array of routes for the host rather than one allocation each.
	xs := make([]ir.Route, len(routes))
	out := make([]*ir.Route, len(routes))
	for i := range routes {
		if r := &routes[i]; insecure && !r.permitInsecure {
			xs[i] = irRedirect(&r.Route)
		} else {
			xs[i] = r.Route
		}
		out[i] = &xs[i]
	}
	return sortRoutes(out)
}

// ownRoutes is irRoutes for the host's own listener: its routes as walk
// built them, in place (an ir.Route is large, and a host has one copy
// fewer of each), so the caller gives up routes to the IR, which is never
// modified.
func ownRoutes(routes []Route) []*ir.Route {
	out := make([]*ir.Route, len(routes))
	for i := range routes {
		out[i] = &routes[i].Route
	}
	return sortRoutes(out)
}

// sortRoutes orders routes for Envoy and keeps the last of each match
// (irRoutes).
func sortRoutes(out []*ir.Route) []*ir.Route {
	slices.SortStableFunc(out, func(a, b *ir.Route) int {
		return cmp.Or(cmp.Compare(core.PathRank(a.PathKind), core.PathRank(b.PathKind)),
			cmp.Compare(len(b.Path), len(a.Path)), // longer first
			cmp.Compare(len(b.Headers), len(a.Headers)),
			cmp.Compare(len(b.QueryParams), len(a.QueryParams)))
	})
	return lastOfEachMatch(out)
}

// lastOfEachMatch drops from sorted routes each one a later route of the
// same match replaces. Routes of the same match are in one of the sort's
// tie groups (same path rank, path length and condition counts), kept in
// walk order, so only those are compared: pairwise in a small group, with
// no allocation, through a map in a large one.
func lastOfEachMatch(sorted []*ir.Route) []*ir.Route {
	out := sorted[:0]
	for start := 0; start < len(sorted); {
		end := start + 1
		for end < len(sorted) && sameTieGroup(sorted[start], sorted[end]) {
			end++
		}
		group := sorted[start:end]
		if len(group) <= smallTieGroup {
			for i, r := range group {
				if !slices.ContainsFunc(group[i+1:], func(o *ir.Route) bool { return sameMatch(o, r) }) {
					out = append(out, r)
				}
			}
		} else {
			last := make(map[string]int, len(group))
			for i, r := range group {
				last[matchKey(r)] = i
			}
			for i, r := range group {
				if last[matchKey(r)] == i {
					out = append(out, r)
				}
			}
		}
		start = end
	}
	clear(sorted[len(out):])
	return out
}

// smallTieGroup is the largest tie group compared pairwise.
const smallTieGroup = 32

// sameTieGroup: a and b are equal for irRoutes' sort.
func sameTieGroup(a, b *ir.Route) bool {
	return core.PathRank(a.PathKind) == core.PathRank(b.PathKind) && len(a.Path) == len(b.Path) &&
		len(a.Headers) == len(b.Headers) && len(a.QueryParams) == len(b.QueryParams)
}

// sameMatch: a and b match the same requests the same way, as Contour
// compares them (its conditionsToString): path, then header and query
// parameter conditions in order.
func sameMatch(a, b *ir.Route) bool {
	return a.PathKind == b.PathKind && a.Path == b.Path && slices.Equal(a.Headers, b.Headers) && slices.Equal(a.QueryParams, b.QueryParams)
}

// matchKey is a string equal for routes of sameMatch.
func matchKey(r *ir.Route) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d%q", r.PathKind, r.Path)
	for _, h := range r.Headers {
		fmt.Fprintf(&b, "|%q%q%q%t%t", h.Name, h.Kind, h.Value, h.IgnoreCase, h.TreatMissingAsEmpty)
	}
	for _, q := range r.QueryParams {
		fmt.Fprintf(&b, "|%q%q%q%t", q.Name, q.Kind, q.Value, q.IgnoreCase)
	}
	return b.String()
}

// InsecureRoutes are the routes of a TLS host on the HTTP listener: when
// every one of them would be a plain HTTPS redirect (no permitInsecure
// route, no IP filter, the route's or the host's, nor a route's own rate
// limit to keep applying), one redirect of every path instead, so that a
// route change of one TLS host does not change the HTTP listener's route
// configuration, shared by all hosts and sent again to every Envoy on each
// change. A path no route matches is then redirected too (to a 404 over
// HTTPS) where Contour answers 404. A wildcard host's keeps the :authority
// condition of its routes (wildcard.go). Otherwise each route is
// redirected with its whole match (irRoutes). No routes, no redirect.
// root, when extensions are registered, is the root's origin: the
// redirect of every path is named after it (routenames.go).
func InsecureRoutes(fqdn string, routes []Route, root *ir.RouteOrigin) []*ir.Route {
	if len(routes) == 0 || slices.ContainsFunc(routes, func(r Route) bool {
		return r.permitInsecure || r.IPFilter != nil || r.RateLimit != nil
	}) {
		return irRoutes(routes, true)
	}
	// No path condition: every path (prefix "/").
	all := &ir.Route{PathKind: ir.PathPrefix, HTTPSRedirect: true, AuthDisabled: true}
	if root != nil {
		all.Name, all.Origin = hostRedirectName(root), root
	}
	if isWildcard(fqdn) {
		all.Headers = []ir.HeaderMatch{WildcardAuthority(fqdn)}
	}
	for _, r := range routes {
		all.Origins = all.Origins.Union(r.Origins)
	}
	return []*ir.Route{all}
}

// irRedirect is the HTTPS redirect of a route, with the route's whole
// match: a wider one would redirect requests another route serves over
// plain HTTP (permitInsecure). A client the route's IP filter keeps out
// is kept out of the redirect too, and the route's rate limit limits it
// (with a bucket of its own, as Contour's).
func irRedirect(r *ir.Route) ir.Route {
	return ir.Route{PathKind: r.PathKind, Path: r.Path, Headers: r.Headers, QueryParams: r.QueryParams, HTTPSRedirect: true, AuthDisabled: true, IPFilter: r.IPFilter, RateLimit: r.RateLimit, Origins: r.Origins,
		Name: redirectName(r.Name), Origin: r.Origin}
}
