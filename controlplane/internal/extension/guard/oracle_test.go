package guard_test

import (
	"regexp"
	"slices"
	"strings"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tcpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/portcullis/portcullis/controlplane/internal/extension/guard"
)

// The oracle: concrete requests followed through a configuration the way
// Envoy would (a chain by address and match, a virtual host by domain,
// the first route whose path matches), written apart from the guard's
// structural reasoning, to judge its verdicts. Requests carry no headers
// or query: routes with such conditions never match here.

// request is where a request arrives and what it asks for.
type request struct {
	chainKey, host, path string
}

// outcome is what a configuration does with a request.
type outcome struct {
	// none: no chain, virtual host or route took it; self: a redirect or
	// a direct response answered it.
	none, self bool
	cluster    string // "*" for a cluster chosen by the request
	// protections are the protecting filters' effective settings, plus
	// the chain's TLS and routing settings as pseudo-filters.
	protections map[string]string
	// vhost: the virtual host that took it (for unmatched paths).
	vhost *routev3.VirtualHost
	rc    *routev3.RouteConfiguration
	hcm   *hcmv3.HttpConnectionManager
	chain *listenerv3.FilterChain
}

var protectingNames = []string{"ExtAuthz", "ExternalProcessor", "RBAC", "JwtAuthentication", "RateLimit", "LocalRateLimit", "Cors", "BasicAuth", "OAuth2"}

func protecting(a *anypb.Any) bool {
	u := a.GetTypeUrl()
	return slices.Contains(protectingNames, u[strings.LastIndex(u, ".")+1:])
}

func enc(m proto.Message) string {
	b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	return string(b)
}

// oracleChains are a configuration's filter chains by their place
// (address and match; "default" for a listener's default chain).
func oracleChains(ls []*listenerv3.Listener) map[string]*listenerv3.FilterChain {
	out := map[string]*listenerv3.FilterChain{}
	for _, l := range ls {
		for _, fc := range l.GetFilterChains() {
			out[enc(l.GetAddress())+"|"+enc(fc.GetFilterChainMatch())] = fc
		}
		if d := l.GetDefaultFilterChain(); d != nil {
			out[enc(l.GetAddress())+"|default"] = d
		}
	}
	return out
}

func oracleListenerFilters(ls []*listenerv3.Listener) map[string][]*listenerv3.ListenerFilter {
	out := map[string][]*listenerv3.ListenerFilter{}
	for _, l := range ls {
		out[enc(l.GetAddress())] = l.GetListenerFilters()
	}
	return out
}

// view is a configuration, indexed for the oracle.
type view struct {
	chains map[string]*listenerv3.FilterChain
	rcs    map[string]*routev3.RouteConfiguration
	lfs    map[string][]*listenerv3.ListenerFilter
}

func newView(ls []*listenerv3.Listener, rcs []*routev3.RouteConfiguration) *view {
	v := &view{chains: oracleChains(ls), rcs: map[string]*routev3.RouteConfiguration{}, lfs: oracleListenerFilters(ls)}
	for _, rc := range rcs {
		v.rcs[rc.GetName()] = rc
	}
	return v
}

// serve follows r through the configuration.
func serve(v *view, r request) outcome {
	chains := v.chains
	fc := chains[r.chainKey]
	if fc == nil {
		fc = chains[r.chainKey[:strings.LastIndex(r.chainKey, "|")]+"|default"]
	}
	if fc == nil {
		return outcome{none: true}
	}
	o := outcome{chain: fc, protections: map[string]string{"tls": enc(fc.GetTransportSocket())}}
	for _, f := range fc.GetFilters() {
		if t := (&tcpv3.TcpProxy{}); f.GetTypedConfig().UnmarshalTo(t) == nil {
			o.cluster = t.GetCluster()
			return o
		}
		h := &hcmv3.HttpConnectionManager{}
		if f.GetTypedConfig().UnmarshalTo(h) != nil {
			continue
		}
		o.hcm = h
		o.protections["routing"] = enc(&hcmv3.HttpConnectionManager{NormalizePath: h.GetNormalizePath(), MergeSlashes: h.GetMergeSlashes(),
			PathWithEscapedSlashesAction: h.GetPathWithEscapedSlashesAction(), StripMatchingHostPort: h.GetStripMatchingHostPort(),
			UseRemoteAddress: h.GetUseRemoteAddress(), XffNumTrustedHops: h.GetXffNumTrustedHops(), ForwardClientCertDetails: h.GetForwardClientCertDetails()})
		o.rc = h.GetRouteConfig()
		if rds := h.GetRds(); rds != nil {
			if o.rc = v.rcs[rds.GetRouteConfigName()]; o.rc == nil {
				return outcome{none: true}
			}
		}
	}
	if o.hcm == nil {
		return outcome{none: true}
	}
	o.vhost = oracleVirtualHost(o.rc, r.host)
	if o.vhost == nil {
		o.none = true
		return o
	}
	for _, rt := range o.vhost.GetRoutes() {
		if !pathMatches(rt.GetMatch(), r.path) {
			continue
		}
		routeOutcome(&o, rt)
		return o
	}
	o.none = true
	return o
}

// routeOutcome completes o with the route that took the request.
func routeOutcome(o *outcome, rt *routev3.Route) {
	a := rt.GetRoute()
	if a == nil {
		o.self = true
		return
	}
	switch {
	case a.GetCluster() != "":
		o.cluster = a.GetCluster()
	case len(a.GetWeightedClusters().GetClusters()) > 0:
		o.cluster = a.GetWeightedClusters().GetClusters()[0].GetName()
	default:
		o.cluster = "*"
	}
	for name, s := range settings(o.hcm, o.rc, o.vhost, rt) {
		o.protections[name] = s
	}
}

// settings are the protecting filters' effective settings on rt: a
// filter after the router, or missing, is off.
func settings(h *hcmv3.HttpConnectionManager, rc *routev3.RouteConfiguration, vh *routev3.VirtualHost, rt *routev3.Route) map[string]string {
	out := map[string]string{}
	routed := false
	for _, f := range h.GetHttpFilters() {
		if strings.HasSuffix(f.GetTypedConfig().GetTypeUrl(), ".Router") {
			routed = true
		}
		if !protecting(f.GetTypedConfig()) || routed {
			continue
		}
		a := rt.GetTypedPerFilterConfig()[f.GetName()]
		if a == nil {
			a = vh.GetTypedPerFilterConfig()[f.GetName()]
		}
		if a == nil {
			a = rc.GetTypedPerFilterConfig()[f.GetName()]
		}
		switch {
		case a != nil && disables(a):
			out[f.GetName()] = "off"
		case a != nil:
			out[f.GetName()] = enc(f) + enc(a)
		case f.GetDisabled():
			out[f.GetName()] = "off"
		default:
			out[f.GetName()] = enc(f)
		}
	}
	return out
}

// disables: a per-route setting that switches its filter off: a
// FilterConfig marked disabled, a "disabled" field set, or an RBAC
// override without rules.
func disables(a *anypb.Any) bool {
	m, err := a.UnmarshalNew()
	if err != nil {
		return false
	}
	if fc, ok := m.(*routev3.FilterConfig); ok {
		return fc.GetDisabled() || fc.GetConfig().GetTypeUrl() != "" && disables(fc.GetConfig())
	}
	r := m.ProtoReflect()
	if fd := r.Descriptor().Fields().ByName("disabled"); fd != nil && fd.Kind() == protoreflect.BoolKind && r.Get(fd).Bool() {
		return true
	}
	if fd := r.Descriptor().Fields().ByName("rbac"); fd != nil && r.Descriptor().Name() == "RBACPerRoute" {
		return !r.Has(fd)
	}
	return false
}

func oracleVirtualHost(rc *routev3.RouteConfiguration, host string) *routev3.VirtualHost {
	var exact, star *routev3.VirtualHost
	var suffix *routev3.VirtualHost
	suffixLen := -1
	for _, vh := range rc.GetVirtualHosts() {
		for _, d := range vh.GetDomains() {
			d = strings.ToLower(strings.TrimSuffix(d, ":*"))
			switch {
			case d == host:
				exact = vh
			case d == "*":
				star = vh
			case strings.HasPrefix(d, "*") && strings.HasSuffix(host, d[1:]) && len(d) > suffixLen:
				suffix, suffixLen = vh, len(d)
			}
		}
	}
	switch {
	case exact != nil:
		return exact
	case suffix != nil:
		return suffix
	}
	return star
}

func pathMatches(m *routev3.RouteMatch, path string) bool {
	if len(m.GetHeaders()) > 0 || len(m.GetQueryParameters()) > 0 || m.GetGrpc() != nil {
		return false
	}
	fold := m.GetCaseSensitive() != nil && !m.GetCaseSensitive().GetValue()
	p := path
	norm := func(s string) string {
		if fold {
			return strings.ToLower(s)
		}
		return s
	}
	switch s := m.GetPathSpecifier().(type) {
	case *routev3.RouteMatch_Prefix:
		return strings.HasPrefix(norm(p), norm(s.Prefix))
	case *routev3.RouteMatch_Path:
		return norm(p) == norm(s.Path)
	case *routev3.RouteMatch_PathSeparatedPrefix:
		q := norm(s.PathSeparatedPrefix)
		return norm(p) == q || strings.HasPrefix(norm(p), q+"/")
	case *routev3.RouteMatch_SafeRegex:
		re, err := regexp.Compile("^(?:" + s.SafeRegex.GetRegex() + ")$")
		return err == nil && re.MatchString(p)
	}
	return false
}

// widens says how after serves r more openly than before, or "".
func widens(ours guard.Ours, before, after *view, r request) string {
	a := serve(after, r)
	if a.none || a.self || (a.cluster != "*" && !ours(a.cluster)) {
		return ""
	}
	b := serve(before, r)
	if lf := before.lfs[addrOf(r.chainKey)]; len(lf) > 0 {
		have := after.lfs[addrOf(r.chainKey)]
		for _, f := range lf {
			if !slices.ContainsFunc(have, func(g *listenerv3.ListenerFilter) bool { return proto.Equal(f, g) }) {
				return "listener filter " + f.GetName() + " gone"
			}
		}
	}
	switch {
	case b.self:
		return "a request answered by a redirect or a direct response reaches an upstream"
	case b.chain == nil:
		return "a request no chain took reaches an upstream"
	case !b.none:
		for name, s := range b.protections {
			if s != "off" && a.protections[name] != s {
				return "filter " + name + " weakened"
			}
		}
		return ""
	}
	// An unmatched path: like one of its virtual host's routes.
	for name, s := range b.protections {
		if (name == "tls" || name == "routing") && a.protections[name] != s {
			return name + " changed"
		}
	}
	allowed := map[string][]string{}
	if b.hcm != nil {
		for _, rt := range b.vhost.GetRoutes() {
			if rt.GetRoute() != nil && (rt.GetRoute().GetCluster() == "" || ours(rt.GetRoute().GetCluster())) {
				for name, s := range settings(b.hcm, b.rc, b.vhost, rt) {
					allowed[name] = append(allowed[name], s)
				}
			}
		}
		if len(allowed) == 0 {
			for name, s := range settings(b.hcm, b.rc, b.vhost, &routev3.Route{}) {
				allowed[name] = []string{s}
			}
		}
	}
	for name, ss := range allowed {
		if !slices.Contains(ss, "off") && !slices.Contains(ss, a.protections[name]) {
			return "filter " + name + " weakened on a path that had no route"
		}
	}
	return ""
}

func addrOf(chainKey string) string { return chainKey[:strings.Index(chainKey, "|")] }
