package guard

import (
	"fmt"
	"slices"
	"strings"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
)

// Ours reports whether a cluster is one of Portcullis's (the invariant
// protects those; an extension's own clusters are its business).
type Ours func(cluster string) bool

// reachesOurs reports whether r may send a request to one of Portcullis's
// clusters: by name, by weight, or by a cluster it does not name (from a
// header or a plugin: any of them).
func reachesOurs(r *routev3.Route, ours Ours) bool {
	a := r.GetRoute()
	if a == nil {
		return false // a redirect, a direct response: no upstream
	}
	switch {
	case a.GetCluster() != "":
		return ours(a.GetCluster())
	case a.GetWeightedClusters() != nil:
		for _, c := range a.GetWeightedClusters().GetClusters() {
			if c.GetClusterHeader() != "" || ours(c.GetName()) {
				return true
			}
		}
		return false
	}
	return true // cluster_header, a plugin: whatever the request says
}

// pathMatch is what a route's match says of the path: a prefix, an exact
// path, or anything (a regex, a template, a matcher: over-approximated).
// Header and query conditions only narrow a match: they are ignored.
type pathMatch struct {
	path       string
	exact, any bool
}

func pathOf(m *routev3.RouteMatch) pathMatch {
	var p pathMatch
	switch s := m.GetPathSpecifier().(type) {
	case *routev3.RouteMatch_Prefix:
		p.path = s.Prefix
	case *routev3.RouteMatch_Path:
		p.path, p.exact = s.Path, true
	case *routev3.RouteMatch_PathSeparatedPrefix:
		p.path = s.PathSeparatedPrefix
	default:
		return pathMatch{any: true}
	}
	if m.GetCaseSensitive() != nil && !m.GetCaseSensitive().GetValue() {
		p.path = strings.ToLower(p.path)
	}
	return p
}

// intersects reports whether some path may match both.
func (p pathMatch) intersects(q pathMatch) bool {
	if p.any || q.any {
		return true
	}
	// Compare case-insensitively: one side may fold case.
	a, b := strings.ToLower(p.path), strings.ToLower(q.path)
	switch {
	case p.exact && q.exact:
		return a == b
	case p.exact:
		return strings.HasPrefix(a, b)
	case q.exact:
		return strings.HasPrefix(b, a)
	}
	return strings.HasPrefix(a, b) || strings.HasPrefix(b, a)
}

// compareVirtualHosts checks va, a virtual host of the answer's route
// configuration rca, against vb, the one of rcb that served the same hosts
// before (nil: none did); same says they are one virtual host (routes
// with an equal match are the same route). Each route of va that reaches
// Portcullis's clusters must be at least as protected as every route of
// vb whose requests it may now serve.
func compareVirtualHosts(fs Filters, ours Ours, rcb *routev3.RouteConfiguration, vb *routev3.VirtualHost, rca *routev3.RouteConfiguration, va *routev3.VirtualHost, same bool) []string {
	var out []string
	ids := newRouteIdentity(va, vb, same)
	for k, o := range va.GetRoutes() {
		if !reachesOurs(o, ours) {
			continue
		}
		ov, op := routeVector(fs, rca, va, o), pathOf(o.GetMatch())
		intersecting := false
		for j, i := range vb.GetRoutes() {
			if !op.intersects(pathOf(i.GetMatch())) {
				continue
			}
			intersecting = true
			if ids.tookBefore(k, j) {
				continue
			}
			if r := weaker(fs, rcb, vb, j, va, k, ov); r != "" {
				out = append(out, r)
			}
		}
		if !intersecting {
			if name, ok := ov.within(unmatched(fs, ours, rcb, vb)); !ok {
				out = append(out, fmt.Sprintf("route %d of virtual host %q sends paths that had no route with a setting of filter %s that none of the virtual host's routes had", k, va.GetName(), name))
			}
		}
	}
	return out
}

// weaker says how route k of va, of settings ov, serves the requests of
// route j of vb more openly than j did; "" when it does not.
func weaker(fs Filters, rcb *routev3.RouteConfiguration, vb *routev3.VirtualHost, j int, va *routev3.VirtualHost, k int, ov vector) string {
	i := vb.GetRoutes()[j]
	where := fmt.Sprintf("route %d of virtual host %q", k, va.GetName())
	was := fmt.Sprintf("route %d of virtual host %q", j, vb.GetName())
	if i.GetRoute() == nil {
		return fmt.Sprintf("%s sends to an upstream requests that %s answered itself (a redirect or a direct response)", where, was)
	}
	if name, ok := ov.atLeast(routeVector(fs, rcb, vb, i)); !ok {
		return fmt.Sprintf("%s serves requests of %s with less of filter %s than it had (removed, disabled or changed)", where, was, name)
	}
	return ""
}

// CheckRoute checks out, an answer for route k of virtual host vh (the
// only change to it), against vh. With the same match, out takes exactly
// the requests route k took (the routes before it still take theirs
// first, those after it never got k's): it is compared with its former
// self alone, linear in nothing, where comparing the whole host would be
// quadratic once per route of the host. A changed match moves requests
// between routes: the whole host is compared.
func CheckRoute(fs Filters, ours Ours, vh *routev3.VirtualHost, k int, out *routev3.Route) []string {
	if string(encoding(out.GetMatch())) != string(encoding(vh.GetRoutes()[k].GetMatch())) {
		with := &routev3.VirtualHost{Name: vh.GetName(), Domains: vh.GetDomains(), Routes: slices.Clone(vh.GetRoutes()), TypedPerFilterConfig: vh.GetTypedPerFilterConfig()}
		with.Routes[k] = out
		return CheckVirtualHost(fs, ours, vh, with)
	}
	if !reachesOurs(out, ours) {
		return nil
	}
	// The virtual host's own settings are unchanged: vh stands for the
	// answer's.
	if r := weaker(fs, nil, vh, k, vh, k, routeVector(fs, nil, vh, out)); r != "" {
		return []string{r}
	}
	return nil
}

// routeIdentity says which routes of one virtual host, before and after
// an answer, are the same route (an equal match), by the first index of
// each match in each: looked up, not searched, so that a host of many
// routes costs their pairs, no more. Nil for two virtual hosts.
type routeIdentity struct {
	keysA, keysB   []string
	firstA, firstB map[string]int
}

func newRouteIdentity(va, vb *routev3.VirtualHost, same bool) *routeIdentity {
	if !same {
		return nil
	}
	x := &routeIdentity{keysA: matchKeys(va.GetRoutes()), keysB: matchKeys(vb.GetRoutes())}
	x.firstA, x.firstB = firstOf(x.keysA), firstOf(x.keysB)
	return x
}

// tookBefore reports whether route j's requests (before) never reach
// route k (after): k came before j already (it never took them), or j's
// copy comes before k (they take it).
func (x *routeIdentity) tookBefore(k, j int) bool {
	if x == nil {
		return false
	}
	if former, ok := x.firstB[x.keysA[k]]; ok && former < j {
		return true
	}
	c, ok := x.firstA[x.keysB[j]]
	return ok && c < k
}

// matchKeys are routes' matches as comparable strings (their
// deterministic encodings: equal matches, equal keys).
func matchKeys(rs []*routev3.Route) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = string(encoding(r.GetMatch()))
	}
	return out
}

// firstOf is the index of the first of each key.
func firstOf(keys []string) map[string]int {
	out := make(map[string]int, len(keys))
	for i, k := range keys {
		if _, ok := out[k]; !ok {
			out[k] = i
		}
	}
	return out
}

// unmatched are the settings allowed, by filter, on a route that serves
// paths no route of vb served: those of vb's routes to Portcullis's
// clusters (an extension's new route may be like any of its siblings,
// public ones included), or, when it had none, the filters' defaults for
// the virtual host.
func unmatched(fs Filters, ours Ours, rc *routev3.RouteConfiguration, vb *routev3.VirtualHost) map[string][]setting {
	out := map[string][]setting{}
	for _, r := range vb.GetRoutes() {
		if reachesOurs(r, ours) {
			for name, s := range routeVector(fs, rc, vb, r) {
				out[name] = append(out[name], s)
			}
		}
	}
	if len(out) == 0 {
		for name, s := range routeVector(fs, rc, vb, nil) {
			out[name] = []setting{s}
		}
	}
	return out
}

// CheckVirtualHost checks out, an answer's virtual host with in's name
// and domains, against in, for the protecting filters fs.
func CheckVirtualHost(fs Filters, ours Ours, in, out *routev3.VirtualHost) []string {
	return compareVirtualHosts(fs, ours, nil, in, nil, out, true)
}

// CheckRouteConfiguration checks after, an answer's route configuration,
// against before, the one its connection managers used before, for the
// protecting filters fs: a host is served by the virtual host Envoy picks
// for it in each.
func CheckRouteConfiguration(fs Filters, ours Ours, before, after *routev3.RouteConfiguration) []string {
	type pair struct{ b, a *routev3.VirtualHost }
	seen := map[pair]bool{}
	bIdx, aIdx := newHostIndex(before), newHostIndex(after)
	var out []string
	for _, h := range representativeHosts(before, after) {
		p := pair{bIdx.best(h), aIdx.best(h)}
		if p.a == nil || seen[p] {
			continue
		}
		seen[p] = true
		out = append(out, compareVirtualHosts(fs, ours, before, p.b, after, p.a, p.b != nil && p.b.GetName() == p.a.GetName())...)
	}
	return out
}

// hostOf is a domain without a port (the translator's "host:*" variants
// serve the same host).
func hostOf(d string) string {
	d = strings.ToLower(d)
	if i := strings.LastIndexByte(d, ':'); i > 0 && !strings.Contains(d[i:], "]") {
		return d[:i]
	}
	return d
}

// representativeHosts are one host for each domain of the two route
// configurations: the domain itself, or one its wildcard matches.
func representativeHosts(rcs ...*routev3.RouteConfiguration) []string {
	var out []string
	for _, rc := range rcs {
		for _, vh := range rc.GetVirtualHosts() {
			for _, d := range vh.GetDomains() {
				d = hostOf(d)
				switch {
				case d == "*":
					out = append(out, "any.invalid")
				case strings.HasPrefix(d, "*"):
					out = append(out, "any"+d[1:])
				case strings.HasSuffix(d, "*"):
					out = append(out, d[:len(d)-1]+"any")
				default:
					out = append(out, d)
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// hostIndex finds the virtual host Envoy picks for a host: an exact
// domain, else the longest suffix wildcard ("*.example.com"), else the
// longest prefix wildcard ("example.*"), else "*". Indexed: a route
// configuration shared by 10,000 hosts is looked up once per host.
type hostIndex struct {
	exact            map[string]*routev3.VirtualHost
	suffixes, prefix []wildcard // longest first
	star             *routev3.VirtualHost
}

type wildcard struct {
	part string
	vh   *routev3.VirtualHost
}

func newHostIndex(rc *routev3.RouteConfiguration) hostIndex {
	x := hostIndex{exact: map[string]*routev3.VirtualHost{}}
	for _, vh := range rc.GetVirtualHosts() {
		for _, d := range vh.GetDomains() {
			d = hostOf(d)
			switch {
			case d == "*":
				x.star = vh
			case strings.HasPrefix(d, "*"):
				x.suffixes = append(x.suffixes, wildcard{d[1:], vh})
			case strings.HasSuffix(d, "*"):
				x.prefix = append(x.prefix, wildcard{d[:len(d)-1], vh})
			default:
				x.exact[d] = vh
			}
		}
	}
	longest := func(a, b wildcard) int { return len(b.part) - len(a.part) }
	slices.SortStableFunc(x.suffixes, longest)
	slices.SortStableFunc(x.prefix, longest)
	return x
}

func (x hostIndex) best(host string) *routev3.VirtualHost {
	if vh := x.exact[host]; vh != nil {
		return vh
	}
	for _, w := range x.suffixes {
		if len(host) > len(w.part) && strings.HasSuffix(host, w.part) {
			return w.vh
		}
	}
	for _, w := range x.prefix {
		if len(host) > len(w.part) && strings.HasPrefix(host, w.part) {
			return w.vh
		}
	}
	return x.star
}
