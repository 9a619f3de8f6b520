package builder

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/config"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// route is a route under construction: its match accumulates the
// conditions of every include on the way from the root.
type route struct {
	ir.Route
	permitInsecure bool
}

// walk builds the routes of p and of the HTTPProxies it includes. chain is
// the include path from the root (for cycle detection); parent carries the
// match conditions inherited from the includes.
func (b *rootBuilder) walk(p *contourv1.HTTPProxy, chain []types.NamespacedName, parent route, scope authScope, secure bool) []route {
	key := nn(p.Namespace, p.Name)
	st := b.proxyStatus(p)
	b.res.visited[key] = true
	b.out.sources.walked = append(b.out.sources.walked, proxyRef(p.Namespace, p.Name))
	chain = append(chain, key)
	if !b.expand(chain, p) {
		return nil // past a limit: the root is not served (expand.go)
	}

	var out []route
	for i, r := range p.Spec.Routes {
		if rt, ok := b.buildRoute(p, i, r, parent, scope, secure, st); ok {
			out = append(out, rt)
		}
	}

	seen := map[string]int{}
	for i, inc := range p.Spec.Includes {
		where := fmt.Sprintf("Spec.Includes[%d]", i)
		ns := inc.Namespace
		if ns == "" {
			ns = p.Namespace
		}
		childKey := nn(ns, inc.Name)
		cond, ok := mergeConditions(parent, inc.Conditions, where, st)
		if !ok {
			continue
		}
		ck := conditionsKey(inc.Conditions)
		if j, dup := seen[ck]; dup {
			st.AddError(contourv1.ConditionTypeIncludeError, status.ReasonDuplicateMatchConditions, fmt.Sprintf("%s: duplicate conditions defined on an include (same as Spec.Includes[%d])", where, j))
			continue
		}
		seen[ck] = i
		child := b.r.proxy(childKey)
		if child == nil {
			st.AddError(contourv1.ConditionTypeIncludeError, status.ReasonIncludeNotFound, fmt.Sprintf("%s: include %s not found", where, childKey))
			continue
		}
		if child.Spec.VirtualHost != nil {
			st.AddError(contourv1.ConditionTypeIncludeError, status.ReasonRootIncludesRoot, fmt.Sprintf("%s: root httpproxy cannot delegate to another root httpproxy (%s)", where, childKey))
			continue
		}
		if slices.Contains(chain, childKey) {
			var path []string
			for _, c := range append(chain, childKey) {
				path = append(path, c.String())
			}
			st.AddError(contourv1.ConditionTypeIncludeError, status.ReasonIncludeCreatesCycle, fmt.Sprintf("%s: include creates a delegation cycle: %s", where, strings.Join(path, " -> ")))
			continue
		}
		routes, ok := b.include(child, chain, cond, scope, secure)
		if !ok {
			return nil
		}
		if !b.proxyStatus(child).Valid() {
			st.AddWarning(contourv1.ConditionTypeIncludeError, status.ReasonIncludedProxyInvalid, fmt.Sprintf("%s: included HTTPProxy %s is invalid: its routes are not served", where, childKey))
			continue
		}
		out = append(out, routes...)
	}
	if !st.Valid() {
		return nil
	}
	return out
}

func (b *rootBuilder) buildRoute(p *contourv1.HTTPProxy, i int, r contourv1.Route, parent route, scope authScope, secure bool, st *status.Object) (route, bool) {
	where := fmt.Sprintf("Spec.Routes[%d]", i)
	rt, ok := mergeConditions(parent, r.Conditions, where, st)
	if !ok {
		return rt, false
	}
	rt.permitInsecure = r.PermitInsecure
	valid := true
	fail := func(typ, reason, format string, args ...any) {
		st.AddError(typ, reason, where+": "+fmt.Sprintf(format, args...))
		valid = false
	}
	if len(rt.Headers) > 0 {
		if err := headerConditionsValid(rt.Headers); err != nil {
			fail(contourv1.ConditionTypeHeaderConditionsError, status.ReasonHeaderMatchConditionsNotValid, "%v", err)
		}
	}

	// Authorization: the route's own policy replaces the enclosing
	// "disabled" and merges over the enclosing context.
	disabled, ctx := scope.policy.Disabled, scope.policy.Context
	if ap := r.AuthPolicy; ap != nil {
		disabled = ap.Disabled
		ctx = maps.Clone(ctx)
		if ctx == nil {
			ctx = map[string]string{}
		}
		maps.Copy(ctx, ap.Context)
	}
	if scope.enabled {
		// A host that opted out of global authorization has it off on
		// every route: its own HCM has no filter to turn back on.
		disabled = disabled || scope.optOut
		rt.AuthDisabled = disabled
		if !disabled && len(ctx) > 0 {
			rt.AuthContext = ctx
		}
		if scope.own && r.PermitInsecure && !disabled {
			fail(contourv1.ConditionTypeAuthError, status.ReasonAuthPermitInsecureNotDisabled, "permitInsecure requires authorization to be disabled on the route (authPolicy.disabled: true): its insecure copy on the HTTP listener would not be authorized")
		}
	}
	rt.ExtProc = b.routeExtProc(p, r, scope.proc, fail)
	b.warnGlobalUnavailable(rt.Route, scope, st)

	if len(r.Services) == 0 {
		fail(contourv1.ConditionTypeRouteError, status.ReasonNoServicesPresent, "route.services must have at least one entry")
	}
	allZero := true
	var sum int64
	for _, s := range r.Services {
		if s.Weight > 0 {
			allZero = false
		}
		sum += min(max(s.Weight, 0), math.MaxUint32)
	}
	if sum > math.MaxUint32 {
		// Envoy rejects the whole route configuration (shared by every
		// virtual host of the HTTP listener) over this.
		fail(contourv1.ConditionTypeServiceError, status.ReasonServiceWeightInvalid, "the weights of the services add up to %d, more than %d", sum, uint32(math.MaxUint32))
	}
	for j, s := range r.Services {
		swhere := fmt.Sprintf("Services[%d]", j)
		if s.Port < 1 || s.Port > 65535 {
			fail(contourv1.ConditionTypeServiceError, status.ReasonServicePortInvalid, "%s: service %q: port must be in the range 1-65535", swhere, s.Name)
			continue
		}
		be, err := b.r.backend(nn(p.Namespace, s.Name), s.Port)
		if err != nil {
			fail(contourv1.ConditionTypeServiceError, status.ReasonServiceUnresolvedReference, "%s: Service [%s:%d] is invalid or missing: %v", swhere, s.Name, s.Port, err)
			continue
		}
		protocol := ir.HTTP1
		if s.Protocol != nil {
			switch *s.Protocol {
			case "h2":
				protocol = ir.H2
			case "h2c":
				protocol = ir.H2C
			case "tls":
				protocol = ir.TLS
			default:
				fail(contourv1.ConditionTypeServiceError, status.ReasonUnsupportedProtocol, "%s: Service [%s:%d] protocol %q is unsupported: use h2, h2c or tls", swhere, s.Name, s.Port, *s.Protocol)
				continue
			}
		}
		var uv *ir.UpstreamValidation
		if s.UpstreamValidation != nil {
			if protocol != ir.TLS && protocol != ir.H2 {
				fail(contourv1.ConditionTypeServiceError, status.ReasonTLSUpstreamValidation, "%s: Service [%s:%d] TLS upstream validation policy error: validation requires protocol tls or h2", swhere, s.Name, s.Port)
				continue
			}
			if uv, err = b.upstreamValidation(s.UpstreamValidation, p.Namespace); err != nil {
				fail(contourv1.ConditionTypeServiceError, status.ReasonTLSUpstreamValidation, "%s: Service [%s:%d] TLS upstream validation policy error: %v", swhere, s.Name, s.Port, err)
				continue
			}
		}
		reqH, err := headersPolicy(s.RequestHeadersPolicy, true)
		if err != nil {
			fail(contourv1.ConditionTypeHeadersPolicyError, status.ReasonRequestHeadersPolicyInvalid, "%s.RequestHeadersPolicy: %v", swhere, err)
			continue
		}
		respH, err := headersPolicy(s.ResponseHeadersPolicy, false)
		if err != nil {
			fail(contourv1.ConditionTypeHeadersPolicyError, status.ReasonResponseHeadersPolicyInvalid, "%s.ResponseHeadersPolicy: %v", swhere, err)
			continue
		}
		if len(be.endpoints) == 0 && be.service.Spec.ExternalName == "" {
			st.AddWarning(contourv1.ConditionTypeServiceError, status.ReasonNoEndpoints, fmt.Sprintf("%s: Service %s/%s has no ready endpoints for port %d", where, p.Namespace, s.Name, s.Port))
		}
		c := b.clusterFor("service", be, protocol, uv, "", nil)
		b.out.sources.clusters.add(c.Name, proxyRef(p.Namespace, p.Name))
		if uv != nil {
			b.out.sources.secrets.add(uv.CASecret, proxyRef(p.Namespace, p.Name))
		}
		w := uint32(min(s.Weight, math.MaxUint32))
		if allZero {
			w = 1
		}
		rt.Clusters = append(rt.Clusters, ir.WeightedCluster{Cluster: c.Name, Weight: w, RequestHeaders: reqH, ResponseHeaders: respH})
	}

	var err error
	if rt.RequestHeaders, err = headersPolicy(r.RequestHeadersPolicy, true); err != nil {
		fail(contourv1.ConditionTypeHeadersPolicyError, status.ReasonRequestHeadersPolicyInvalid, "RequestHeadersPolicy: %v", err)
	}
	if rt.ResponseHeaders, err = headersPolicy(r.ResponseHeadersPolicy, false); err != nil {
		fail(contourv1.ConditionTypeHeadersPolicyError, status.ReasonResponseHeadersPolicyInvalid, "ResponseHeadersPolicy: %v", err)
	}
	if tp := r.TimeoutPolicy; tp != nil {
		if rt.ResponseTimeout, err = config.ParseTimeout(tp.Response); err != nil {
			fail(contourv1.ConditionTypeRouteError, status.ReasonTimeoutPolicyNotValid, "TimeoutPolicy.Response: %v", err)
		}
		if rt.IdleTimeout, err = config.ParseTimeout(tp.Idle); err != nil {
			fail(contourv1.ConditionTypeRouteError, status.ReasonTimeoutPolicyNotValid, "TimeoutPolicy.Idle: %v", err)
		}
	}
	return rt, valid
}

// mergeConditions appends one condition block to the inherited match:
// prefixes concatenate, headers accumulate. Every match field of an entry
// applies, as in Contour: {prefix: /x, header: ...} matches both (taking
// only the first field set would serve the route to requests its header
// condition excludes), and {prefix, exact} in one entry counts as two path
// matches.
func mergeConditions(parent route, conds []contourv1.MatchCondition, where string, st *status.Object) (route, bool) {
	out := route{Route: ir.Route{PathKind: parent.PathKind, Path: parent.Path, Headers: slices.Clone(parent.Headers)}}
	prefixes, exacts := 0, 0
	for _, c := range conds {
		if c.Prefix != "" {
			prefixes++
			if err := pathConditionValid("prefix", c.Prefix); err != nil {
				st.AddError(contourv1.ConditionTypePathConditionsError, status.ReasonPathMatchConditionsNotValid, fmt.Sprintf("%s: %v", where, err))
				return out, false
			}
			out.Path = joinPath(out.Path, c.Prefix)
		}
		if c.Exact != "" {
			exacts++
			if err := pathConditionValid("exact", c.Exact); err != nil {
				st.AddError(contourv1.ConditionTypePathConditionsError, status.ReasonPathMatchConditionsNotValid, fmt.Sprintf("%s: %v", where, err))
				return out, false
			}
			out.Path = joinPath(out.Path, c.Exact)
			out.PathKind = ir.PathExact
		}
		if c.Header != nil {
			h, err := headerMatch(c.Header)
			if err != nil {
				st.AddError(contourv1.ConditionTypeHeaderConditionsError, status.ReasonHeaderMatchConditionsNotValid, fmt.Sprintf("%s: %v", where, err))
				return out, false
			}
			out.Headers = append(out.Headers, h)
		}
	}
	switch {
	case prefixes > 1:
		st.AddError(contourv1.ConditionTypePathConditionsError, status.ReasonPathMatchConditionsNotValid, where+": more than one prefix is not allowed in a condition block")
		return out, false
	case exacts > 1:
		st.AddError(contourv1.ConditionTypePathConditionsError, status.ReasonPathMatchConditionsNotValid, where+": more than one exact is not allowed in a condition block")
		return out, false
	case prefixes+exacts > 1:
		st.AddError(contourv1.ConditionTypePathConditionsError, status.ReasonPathMatchConditionsNotValid, where+": prefix and exact conditions cannot be combined in a condition block")
		return out, false
	case exacts == 1 && parent.PathKind == ir.PathExact:
		st.AddError(contourv1.ConditionTypePathConditionsError, status.ReasonPathMatchConditionsNotValid, where+": cannot add a path condition under an exact match")
		return out, false
	}
	return out, true
}

// noControlBytes refuses line breaks and NUL bytes in a value that reaches
// Envoy: it rejects them in names and paths, and with them the whole route
// configuration, which the HTTP listener's virtual hosts all share.
func noControlBytes(v string) error {
	if strings.ContainsAny(v, "\r\n\x00") {
		return fmt.Errorf("%q contains a line break or a NUL byte", v)
	}
	return nil
}

// pathConditionValid refuses what Envoy rejects in a path match: besides
// line breaks and NUL bytes, "?" and "#" (a path never holds them; Envoy
// refuses them in a path-separated prefix, the whole route configuration
// with it); and a path not starting with "/". kind ("prefix" or "exact")
// names the condition in the error.
func pathConditionValid(kind, p string) error {
	if strings.ContainsAny(p, "?#") {
		return fmt.Errorf("%s %q contains \"?\" or \"#\": a path condition cannot match a query or a fragment", kind, p)
	}
	if err := noControlBytes(p); err != nil {
		return fmt.Errorf("%s %v", kind, err)
	}
	if !strings.HasPrefix(p, "/") {
		return fmt.Errorf("%s conditions must start with /, %s was supplied", kind, p)
	}
	return nil
}

// joinPath appends a condition's path to the inherited prefix without
// doubling the slash between them ("/api" + "/v1" = "/api/v1"; "/api" + "/"
// = "/api").
func joinPath(parent, p string) string {
	switch {
	case parent == "" || parent == "/":
		return p
	case p == "/":
		return parent
	case strings.HasSuffix(parent, "/"):
		return parent + strings.TrimPrefix(p, "/")
	}
	return parent + p
}

func headerMatch(h *contourv1.HeaderMatchCondition) (ir.HeaderMatch, error) {
	out := ir.HeaderMatch{Name: h.Name}
	if h.Name == "" {
		return out, fmt.Errorf("header condition must name a header")
	}
	for _, v := range []string{h.Name, h.Contains, h.NotContains, h.Exact, h.NotExact} {
		if err := noControlBytes(v); err != nil {
			return out, fmt.Errorf("header condition on %q: %w", h.Name, err)
		}
	}
	n := 0
	set := func(kind, value string) {
		n++
		out.Kind, out.Value = kind, value
	}
	if h.Present {
		set("present", "")
	}
	if h.NotPresent {
		set("notpresent", "")
	}
	if h.Contains != "" {
		set("contains", h.Contains)
	}
	if h.NotContains != "" {
		set("notcontains", h.NotContains)
	}
	if h.Exact != "" {
		set("exact", h.Exact)
	}
	if h.NotExact != "" {
		set("notexact", h.NotExact)
	}
	if n != 1 {
		return out, fmt.Errorf("header condition on %q must set exactly one of present, notpresent, contains, notcontains, exact, notexact", h.Name)
	}
	return out, nil
}

func headerConditionsValid(hs []ir.HeaderMatch) error {
	exact := map[string]string{}
	values := map[string]bool{}
	for _, h := range hs {
		name := strings.ToLower(h.Name)
		if h.Kind == "exact" {
			if _, dup := exact[name]; dup {
				return fmt.Errorf("cannot specify duplicate header 'exact match' conditions in the same route")
			}
			exact[name] = h.Value
		}
		values[name+"\x00"+h.Kind+"\x00"+h.Value] = true
	}
	for _, h := range hs {
		name := strings.ToLower(h.Name)
		switch h.Kind {
		case "exact":
			if values[name+"\x00notexact\x00"+h.Value] {
				return fmt.Errorf("cannot specify contradictory 'exact' and 'notexact' conditions for the same route and header")
			}
		case "contains":
			if values[name+"\x00notcontains\x00"+h.Value] {
				return fmt.Errorf("cannot specify contradictory 'contains' and 'notcontains' conditions for the same route and header")
			}
		}
	}
	return nil
}

func conditionsKey(conds []contourv1.MatchCondition) string {
	var parts []string
	for _, c := range conds {
		s := "p=" + c.Prefix + ",e=" + c.Exact
		if h := c.Header; h != nil {
			s += fmt.Sprintf(",h=%s/%v/%v/%s/%s/%s/%s", strings.ToLower(h.Name), h.Present, h.NotPresent, h.Contains, h.NotContains, h.Exact, h.NotExact)
		}
		parts = append(parts, s)
	}
	sort.Strings(parts)
	return strings.Join(parts, ";")
}

// headersPolicy validates a headers policy. Host may only be set on
// requests, where it rewrites the authority.
func headersPolicy(hp *contourv1.HeadersPolicy, request bool) (*ir.HeadersPolicy, error) {
	if hp == nil {
		return nil, nil
	}
	out := &ir.HeadersPolicy{}
	seen := map[string]bool{}
	for _, h := range hp.Set {
		key := strings.ToLower(h.Name)
		if seen[key] {
			return nil, fmt.Errorf("duplicate header addition: %q", h.Name)
		}
		seen[key] = true
		if msgs := validation.IsHTTPHeaderName(h.Name); len(msgs) > 0 {
			return nil, fmt.Errorf("invalid set header %q: %s", h.Name, strings.Join(msgs, "; "))
		}
		if strings.ContainsAny(h.Value, "\r\n\x00") {
			return nil, fmt.Errorf("invalid set header %q: the value contains a line break or a NUL byte (Envoy rejects them)", h.Name)
		}
		if key == "host" {
			if !request {
				return nil, fmt.Errorf("rewriting %q header is not supported", h.Name)
			}
			out.HostRewrite = h.Value
			continue
		}
		out.Set = append(out.Set, ir.HeaderValue{Name: h.Name, Value: h.Value})
	}
	seen = map[string]bool{}
	for _, name := range hp.Remove {
		key := strings.ToLower(name)
		if seen[key] {
			return nil, fmt.Errorf("duplicate header removal: %q", name)
		}
		seen[key] = true
		if msgs := validation.IsHTTPHeaderName(name); len(msgs) > 0 {
			return nil, fmt.Errorf("invalid remove header %q: %s", name, strings.Join(msgs, "; "))
		}
		if key == "host" {
			return nil, fmt.Errorf("removing %q header is not supported", name)
		}
		out.Remove = append(out.Remove, name)
	}
	return out, nil
}

// irRoutes orders routes the way Envoy must try them: exact paths first,
// then longer prefixes, then more header conditions; ties keep their order.
// For the HTTP listener of a TLS host (insecure), routes that do not permit
// insecure access become redirects to HTTPS.
func irRoutes(routes []route, insecure bool) []*ir.Route {
	out := make([]*ir.Route, 0, len(routes))
	for _, r := range routes {
		x := r.Route
		if insecure && !r.permitInsecure {
			x = irRedirect(r.Route)
		}
		out = append(out, &x)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.PathKind != b.PathKind {
			return a.PathKind == ir.PathExact
		}
		if len(a.Path) != len(b.Path) {
			return len(a.Path) > len(b.Path)
		}
		return len(a.Headers) > len(b.Headers)
	})
	return out
}

func irRedirect(r ir.Route) ir.Route {
	return ir.Route{PathKind: r.PathKind, Path: r.Path, Headers: r.Headers, HTTPSRedirect: true, AuthDisabled: true}
}
