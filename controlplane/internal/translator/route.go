package translator

import (
	"slices"
	"strings"
	"sync"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/parallel"
)

// routeSettings are what the routes of one route configuration share.
type routeSettings struct {
	// filters are the HTTP filters of the HCM that uses the routes: a
	// route configures only those (typed_per_filter_config).
	filters filterSet
	// redirectPort is the port of HTTPS redirects' Location (0: none, for
	// clients reaching HTTPS on 443).
	redirectPort uint32
	// keepHostPort: the HCM keeps the Host header's port (hcmSettings), so
	// a redirect that changes the scheme names the new scheme's port.
	keepHostPort bool
}

// httpRouteSettings are those of the routes of a plaintext listener's
// HCM, whose HTTPS redirects name the port clients reach HTTPS on.
func httpRouteSettings(h hcmSettings, opts Options) routeSettings {
	rs := routeSettings{filters: h.filters(), keepHostPort: h.keepHostPort}
	if opts.HTTPSRedirectPort != 443 {
		rs.redirectPort = opts.HTTPSRedirectPort
	}
	return rs
}

// routeConfig builds one RDS resource, with the origins of its hosts (for
// the Index) and, when it has several virtual hosts, the encoding of each
// one's routes (routeBytes, aligned with rc.VirtualHosts: see assembled).
// c, when not nil, lends the routes of virtual hosts translated by the
// previous translation (see Cache).
func routeConfig(name string, hosts []*ir.VirtualHost, rs routeSettings, c *Cache) (rc *routev3.RouteConfiguration, _ []hostOrigins, routeBytes []string) {
	rc = &routev3.RouteConfiguration{Name: name}
	sorted := append([]*ir.VirtualHost(nil), hosts...)
	if len(sorted) > 1 { // a TLS host's own configuration has one: no sort.Slice's swapper to make
		slices.SortStableFunc(sorted, func(a, b *ir.VirtualHost) int { return strings.Compare(a.FQDN, b.FQDN) })
	}
	rc.VirtualHosts = make([]*routev3.VirtualHost, len(sorted))
	translated := make([]vhostRoutes, len(sorted))
	parallel.For(len(sorted), func(i int) {
		vh := sorted[i]
		t, ok := c.vhostRoutes(vh, rs)
		if !ok {
			t = vhostRoutes{settings: rs, version: newVersion(), routes: make([]*routev3.Route, len(vh.Routes))}
			for j, r := range vh.Routes {
				t.routes[j] = route(r, rs)
			}
			// Shared with the next translations while vh is unchanged:
			// mergeIdentical copies it before adding domains.
			t.vhost = &routev3.VirtualHost{Name: vh.FQDN, Domains: domains(vh.FQDN, rs.keepHostPort), Routes: t.routes,
				TypedPerFilterConfig: hostFilterConfig(vh, rs.filters), RateLimits: hostRateLimits(vh)}
		}
		if len(sorted) > 1 && !t.keyed {
			// Only merging needs it (a TLS host's own configuration has
			// one virtual host).
			t.key, t.keyed = routesKey(vh.FQDN, t.routes), true
		}
		translated[i] = t
		rc.VirtualHosts[i] = t.vhost
	})
	c.keepVHostRoutes(sorted, translated)
	keys := make([]string, len(translated))
	for i, t := range translated {
		keys[i] = t.key
		if v := rc.VirtualHosts[i]; (v.TypedPerFilterConfig != nil || v.RateLimits != nil) && len(sorted) > 1 {
			// Only hosts with the same configuration too are merged.
			keys[i] += hostConfigKey(sorted[i].FQDN, v)
		}
		if len(sorted) > 1 && routesRateLimit(sorted[i]) {
			// A route's local rate limit is a bucket of its own, which
			// merged hosts would share.
			keys[i] += "/own-buckets/" + sorted[i].FQDN
		}
	}
	var vhosts []string
	var from []int
	rc.VirtualHosts, vhosts, from = mergeIdentical(rc.VirtualHosts, keys)
	origins := make([]hostOrigins, len(sorted))
	for i, vh := range sorted {
		origins[i] = hostOrigins{fqdn: vh.FQDN, vhost: vhosts[i], origins: routeFilterOrigins(vh, vh.Origins), routes: translated[i].version}
	}
	if len(sorted) > 1 {
		routeBytes = make([]string, len(from))
		for k, i := range from {
			routeBytes[k] = translated[i].key
		}
	}
	return rc, origins, routeBytes
}

// vhostRoutes is the translation of one virtual host's routes.
type vhostRoutes struct {
	settings routeSettings
	routes   []*routev3.Route
	// vhost is the virtual host of these routes, never modified.
	vhost *routev3.VirtualHost
	// version is given when routes are translated (Versions.Routes).
	version uint64
	// key is the same for the same routes (see mergeIdentical), once
	// keyed.
	key   string
	keyed bool
}

// routesKey is the deterministic encoding of routes (as the routes field of
// a VirtualHost), or, if they cannot be encoded, a key no encoding has
// (never merged; starting with a letter, which no encoding of the field
// does).
func routesKey(fqdn string, routes []*routev3.Route) string {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(&routev3.VirtualHost{Routes: routes})
	if err != nil {
		return "unmarshallable/" + fqdn
	}
	return string(b)
}

// hostConfigKey is the deterministic encoding of a virtual host's
// typed_per_filter_config and rate_limits, or, if it cannot be encoded, a key no encoding
// has (never merged).
func hostConfigKey(fqdn string, v *routev3.VirtualHost) string {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(&routev3.VirtualHost{TypedPerFilterConfig: v.TypedPerFilterConfig, RateLimits: v.RateLimits})
	if err != nil {
		return "unmarshallable/" + fqdn
	}
	return "/host/" + string(b)
}

// mergeIdentical turns virtual hosts whose routes are identical into one
// virtual host with all their domains, named after the first. Envoy picks
// a virtual host by domain and then only looks at its routes, so requests
// are routed exactly as before; but on the HTTP listener, where the routes
// of every TLS host are HTTPS redirects and many hosts have the same
// paths, Envoy has far fewer routes to build each time one host changes.
// Domains are unique across the virtual hosts (one root per FQDN), so a
// domain never moves to a different set of routes. keys[i] is routesKey of
// vhs[i]'s routes; names[i] is the name of the virtual host vhs[i] went to;
// out[k] is vhs[from[k]], or a copy of it with more domains.
func mergeIdentical(vhs []*routev3.VirtualHost, keys []string) (out []*routev3.VirtualHost, names []string, from []int) {
	names, from = make([]string, len(vhs)), make([]int, 0, len(vhs))
	if len(vhs) < 2 {
		for i, v := range vhs {
			names[i] = v.Name
			from = append(from, i)
		}
		return vhs, names, from
	}
	// first is the index in out of the first host of a key; the hosts
	// are the cache's, so the first is copied before it takes others'
	// domains (merged).
	first := make(map[string]int, len(vhs))
	merged := map[int]bool{}
	out = make([]*routev3.VirtualHost, 0, len(vhs))
	for i, v := range vhs {
		if j, ok := first[keys[i]]; ok {
			if !merged[j] {
				merged[j] = true
				out[j] = ShallowClone(out[j])
				out[j].Domains = slices.Clone(out[j].Domains)
			}
			out[j].Domains = append(out[j].Domains, v.Domains...)
			names[i] = out[j].Name
			continue
		}
		first[keys[i]] = len(out)
		names[i] = v.Name
		out = append(out, v)
		from = append(from, i)
	}
	return out, names, from
}

// domains matches the host. An HCM that strips the request's port before
// routing (Contour's way) needs nothing more; one that keeps it
// (keepHostPort) also matches the host with any port. A wildcard host
// ("*.example.com", "*") is one of Envoy's domain wildcards as it is:
// Envoy allows one wildcard per domain, and "*.example.com:*" would be a
// suffix wildcard matching a literal ":*".
func domains(fqdn string, keepHostPort bool) []string {
	if !keepHostPort || strings.HasPrefix(fqdn, "*") {
		return []string{fqdn}
	}
	return []string{fqdn, fqdn + ":*"}
}

// routeBlock and actionBlock hold a route's messages, to be allocated
// together: at scale, routes are most of a translation's allocations.
type routeBlock struct {
	route  routev3.Route
	match  routev3.RouteMatch
	prefix routev3.RouteMatch_Prefix // the most common path matches
	sep    routev3.RouteMatch_PathSeparatedPrefix
}

type actionBlock struct {
	action  routev3.Route_Route
	ra      routev3.RouteAction
	cluster routev3.RouteAction_Cluster
}

// proxyRouteBlock is a route that proxies, most routes: one allocation.
type proxyRouteBlock struct {
	routeBlock
	act actionBlock
}

func route(r *ir.Route, rs routeSettings) *routev3.Route {
	var b *routeBlock
	var a *actionBlock
	if r.HTTPSRedirect || r.Redirect != nil || r.DirectResponse != nil {
		b = new(routeBlock)
	} else {
		pb := new(proxyRouteBlock)
		b, a = &pb.routeBlock, &pb.act
	}
	setMatch(b, r)
	out := &b.route
	out.Name, out.Match = r.Name, &b.match
	switch {
	case r.HTTPSRedirect:
		out.Action = httpsRedirectAction(rs.redirectPort)
	case r.Redirect != nil:
		out.Action = &routev3.Route_Redirect{Redirect: redirect(r.Redirect, r.Path, rs.keepHostPort)}
	case r.DirectResponse != nil:
		out.Action = &routev3.Route_DirectResponse{DirectResponse: directResponse(r.DirectResponse)}
		// Envoy sets a route's response headers on its direct response
		// too (an HTTPProxy's responseHeadersPolicy, a content type for
		// the body, say).
		if p := r.ResponseHeaders; p != nil {
			out.ResponseHeadersToAdd = headerOptions(p)
			out.ResponseHeadersToRemove = p.Remove
		}
	default:
		setAction(a, r)
		out.Action = &a.action
		if p := r.RequestHeaders; p != nil {
			out.RequestHeadersToAdd = headerOptions(p)
			out.RequestHeadersToRemove = p.Remove
		}
		if p := r.ResponseHeaders; p != nil {
			out.ResponseHeadersToAdd = headerOptions(p)
			out.ResponseHeadersToRemove = p.Remove
		}
	}
	out.TypedPerFilterConfig = perFilterConfig(r, rs.filters)
	out.Metadata = routeMetadata(r.Origin)
	return out
}

// httpsRedirectAction is a route's action of httpsRedirect(port); the one
// of the default port is shared by every such route (one per TLS host on
// the HTTP listener), as a message is never modified once built.
func httpsRedirectAction(port uint32) *routev3.Route_Redirect {
	if port == 0 {
		return defaultHTTPSRedirect()
	}
	return &routev3.Route_Redirect{Redirect: httpsRedirect(port)}
}

var defaultHTTPSRedirect = sync.OnceValue(func() *routev3.Route_Redirect {
	return &routev3.Route_Redirect{Redirect: httpsRedirect(0)}
})

// httpsRedirect sends the client to the same URL over HTTPS, permanently;
// port 0 leaves the port out of the Location.
func httpsRedirect(port uint32) *routev3.RedirectAction {
	return &routev3.RedirectAction{
		SchemeRewriteSpecifier: &routev3.RedirectAction_HttpsRedirect{HttpsRedirect: true},
		ResponseCode:           routev3.RedirectAction_MOVED_PERMANENTLY,
		PortRedirect:           port,
	}
}

// setMatch makes b.match r's match: its path, headers and query
// parameters.
func setMatch(b *routeBlock, r *ir.Route) {
	m := &b.match
	switch {
	case r.PathKind == ir.PathExact:
		m.PathSpecifier = &routev3.RouteMatch_Path{Path: r.Path}
	case r.PathKind == ir.PathRegex:
		m.PathSpecifier = &routev3.RouteMatch_SafeRegex{SafeRegex: regex(r.Path)}
	case r.Path == "" || strings.HasSuffix(r.Path, "/"):
		p := r.Path
		if p == "" {
			p = "/"
		}
		b.prefix.Prefix = p
		m.PathSpecifier = &b.prefix
	default:
		// "/api" matches "/api" and "/api/..." but not "/apis".
		b.sep.PathSeparatedPrefix = r.Path
		m.PathSpecifier = &b.sep
	}
	for _, h := range r.Headers {
		m.Headers = append(m.Headers, headerMatcher(h))
	}
	for _, q := range r.QueryParams {
		m.QueryParameters = append(m.QueryParameters, queryParamMatcher(q))
	}
}

// regex is an RE2 expression (Envoy's only engine), matched against the
// whole value.
func regex(re string) *matcherv3.RegexMatcher { return &matcherv3.RegexMatcher{Regex: re} }

func headerMatcher(h ir.HeaderMatch) *routev3.HeaderMatcher {
	hm := &routev3.HeaderMatcher{Name: h.Name}
	str := func(p *matcherv3.StringMatcher) *routev3.HeaderMatcher_StringMatch {
		return &routev3.HeaderMatcher_StringMatch{StringMatch: p}
	}
	switch h.Kind {
	case "present":
		hm.HeaderMatchSpecifier = &routev3.HeaderMatcher_PresentMatch{PresentMatch: true}
	case "notpresent":
		hm.HeaderMatchSpecifier = &routev3.HeaderMatcher_PresentMatch{PresentMatch: true}
		hm.InvertMatch = true
	case "exact", "notexact":
		hm.HeaderMatchSpecifier = str(&matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: h.Value}, IgnoreCase: h.IgnoreCase})
		hm.InvertMatch = h.Kind == "notexact"
	case "contains", "notcontains":
		hm.HeaderMatchSpecifier = str(&matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Contains{Contains: h.Value}, IgnoreCase: h.IgnoreCase})
		hm.InvertMatch = h.Kind == "notcontains"
	case "regex":
		hm.HeaderMatchSpecifier = str(&matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_SafeRegex{SafeRegex: regex(h.Value)}})
	}
	// An absent header then has the empty value: a negated match
	// (invert_match) matches it, where otherwise an absent header fails
	// every match but a negated present one.
	hm.TreatMissingHeaderAsEmpty = h.TreatMissingAsEmpty
	return hm
}

// setAction makes b r's forwarding action.
func setAction(b *actionBlock, r *ir.Route) {
	// A weighted cluster may name a cluster the model does not have (an
	// invalid backend): Envoy accepts such a name over RDS, and its share
	// of the requests is answered 500 rather than Envoy's default 503,
	// which would blame an upstream that was never there.
	a := &b.ra
	b.action.Route = a
	a.ClusterNotFoundResponseCode = routev3.RouteAction_INTERNAL_SERVER_ERROR
	if g := r.GlobalRateLimits; g != nil && !g.Disabled {
		a.RateLimits = rateLimits(g.Descriptors)
	}
	setClusters(a, &b.cluster, r.Clusters)
	if p := r.RequestHeaders; p != nil && p.HostRewrite != "" {
		a.HostRewriteSpecifier = &routev3.RouteAction_HostRewriteLiteral{HostRewriteLiteral: p.HostRewrite}
	}
	if r.ResponseTimeout != nil {
		a.Timeout = durationpb.New(*r.ResponseTimeout)
	}
	if r.IdleTimeout != nil {
		a.IdleTimeout = durationpb.New(*r.IdleTimeout)
	}
	a.RetryPolicy = retryPolicy(r)
	a.HashPolicy = hashPolicies(r.HashPolicies)
	a.UpgradeConfigs = upgrades(r)
	a.InternalRedirectPolicy = internalRedirect(r.InternalRedirect)
	if p := r.PathRewrite; p != nil {
		a.RegexRewrite = pathRewrite(p, r.Path)
	}
	a.RequestMirrorPolicies = mirrors(r.Mirrors)
}

// setClusters sends the route to its one cluster, or to its weighted
// clusters when there are several or one has policies of its own.
func setClusters(a *routev3.RouteAction, one *routev3.RouteAction_Cluster, clusters []ir.WeightedCluster) {
	if len(clusters) == 1 && clusters[0].RequestHeaders == nil && clusters[0].ResponseHeaders == nil && clusters[0].CookieRewrites == nil {
		one.Cluster = clusters[0].Cluster
		a.ClusterSpecifier = one
		return
	}
	wc := &routev3.WeightedCluster{}
	for i := range clusters {
		wc.Clusters = append(wc.Clusters, clusterWeight(&clusters[i]))
	}
	a.ClusterSpecifier = &routev3.RouteAction_WeightedClusters{WeightedClusters: wc}
}

// clusterWeight is one weighted cluster, with its header policies and
// cookie rewrites.
func clusterWeight(c *ir.WeightedCluster) *routev3.WeightedCluster_ClusterWeight {
	cw := &routev3.WeightedCluster_ClusterWeight{Name: c.Cluster, Weight: wrapperspb.UInt32(c.Weight)}
	if p := c.RequestHeaders; p != nil {
		cw.RequestHeadersToAdd = headerOptions(p)
		cw.RequestHeadersToRemove = p.Remove
		if p.HostRewrite != "" {
			cw.HostRewriteSpecifier = &routev3.WeightedCluster_ClusterWeight_HostRewriteLiteral{HostRewriteLiteral: p.HostRewrite}
		}
	}
	if p := c.ResponseHeaders; p != nil {
		cw.ResponseHeadersToAdd = headerOptions(p)
		cw.ResponseHeadersToRemove = p.Remove
	}
	if c.CookieRewrites != nil {
		// The HCM has the Lua filter: withRoutes saw the cluster.
		cw.TypedPerFilterConfig = map[string]*anypb.Any{LuaFilterName: mustAny(cookieRewriteConfig(c.CookieRewrites))}
	}
	return cw
}

// headerOptions are a policy's headers to set (replacing the request's
// value) and to add (appending to it).
func headerOptions(p *ir.HeadersPolicy) []*corev3.HeaderValueOption {
	out := headerValues(p.Set, corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD)
	return append(out, headerValues(p.Add, corev3.HeaderValueOption_APPEND_IF_EXISTS_OR_ADD)...)
}

func headerValues(hs []ir.HeaderValue, action corev3.HeaderValueOption_HeaderAppendAction) []*corev3.HeaderValueOption {
	var out []*corev3.HeaderValueOption
	for _, h := range hs {
		out = append(out, &corev3.HeaderValueOption{
			// Envoy reads %...% in an added header as a variable: a
			// literal % is written %%, so the value is what was written.
			Header:       &corev3.HeaderValue{Key: h.Name, Value: strings.ReplaceAll(h.Value, "%", "%%")},
			AppendAction: action,
		})
	}
	return out
}
