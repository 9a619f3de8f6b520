package httpproxy

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// walk builds the routes of p and of the HTTPProxies it includes. chain is
// the include path from the root (for cycle detection); parent carries the
// match conditions inherited from the includes.
func (b *rootBuilder) walk(p *contourv1.HTTPProxy, chain []types.NamespacedName, parent Route, scope authScope) []Route {
	key := core.NsName(p.Namespace, p.Name)
	st := b.ProxyStatus(p)
	tcpProxyOnChild(p, st) // tcpproxy.go
	b.res.visited = append(b.res.visited, key)
	self := ProxyRef(p.Namespace, p.Name)
	b.walked = append(b.walked, self)
	chain = append(chain, key)
	if !b.expand(chain, p) {
		return nil // past a limit: the root is not served (expand.go)
	}

	// Room for p's routes and, as is common, one route per include: a
	// Route is large, and growing the slice copies them all.
	out := make([]Route, 0, len(p.Spec.Routes)+len(p.Spec.Includes))
	origins := ir.Origins{self} // shared by p's routes: the IR is never modified
	origin := b.routeOrigin(p)
	policies, policyOrigins := b.extensionPolicies(p)
	if len(policies) > 0 {
		origins = origins.Union(policyOrigins)
	}
	for i := range p.Spec.Routes {
		if rt, ok := b.buildRoute(p, i, &p.Spec.Routes[i], &parent, scope, st); ok {
			rt.Origins = origins
			if origin != nil {
				rt.Name, rt.Origin = routeName(origin, i), origin
			}
			withExtensionPolicies(&rt, p, i, policies)
			out = append(out, rt)
		}
	}
	included, ok := b.includes(p, chain, &parent, scope, st)
	if !ok || !st.Valid() {
		return nil
	}
	return append(out, included...)
}

// includes builds the routes of the HTTPProxies p includes; false once the
// root's expansion crossed a limit.
func (b *rootBuilder) includes(p *contourv1.HTTPProxy, chain []types.NamespacedName, parent *Route, scope authScope, st *status.Object) ([]Route, bool) {
	var out []Route
	seen := map[string]int{}
	for i, inc := range p.Spec.Includes {
		where := includePlaces.at(i)
		if kind := includePathRefused(inc); kind != "" {
			// As Contour: an include matches a prefix of its child's
			// paths. p is invalid (not served), and, as Contour, the
			// include is not checked further; an existing child is
			// included, not orphaned, but not built under a match it
			// would be blamed for.
			st.AddError(contourv1.ConditionTypeIncludeError, status.ReasonPathMatchConditionsNotValid, fmt.Sprintf("%s: %s conditions are not allowed in includes block: an include's conditions match a prefix of the included routes' paths", where, kind))
			key := includeKey(p, inc)
			if child := b.R.Proxy(key); child != nil && child.Spec.VirtualHost == nil && !slices.Contains(chain, key) {
				b.res.visited = append(b.res.visited, key)
				b.ProxyStatus(child)
			}
			continue
		}
		cond, ok := mergeConditions(parent, inc.Conditions, where, contourv1.ConditionTypeIncludeError, st)
		if !ok || !ownConditionsValid(parent, &cond, where, st) {
			continue
		}
		if !includeAtRoot(inc.Conditions) {
			ck := conditionsKey(inc.Conditions)
			if j, dup := seen[ck]; dup {
				st.AddError(contourv1.ConditionTypeIncludeError, status.ReasonDuplicateMatchConditions, fmt.Sprintf("%s: duplicate conditions defined on an include (same as Spec.Includes[%d])", where, j))
				continue
			}
			seen[ck] = i
		}
		child := b.includedProxy(p, inc, chain, where, st)
		if child == nil {
			continue
		}
		routes, ok := b.include(child, chain, cond, scope)
		if !ok {
			return nil, false
		}
		if !b.ProxyStatus(child).Valid() {
			st.AddWarning(contourv1.ConditionTypeIncludeError, status.ReasonIncludedProxyInvalid, fmt.Sprintf("%s: included HTTPProxy %s is invalid: its routes are not served", where, core.NsName(child.Namespace, child.Name)))
			continue
		}
		out = append(out, routes...)
	}
	return out, true
}

// ownConditionsValid checks the header and query parameter conditions an
// include adds to its parent's (cond is the merge): conditions that cannot
// hold together are the including proxy's error, as in Contour, rather
// than that of every route of the child, which would be blamed for them.
// Conflicts between an include's conditions and those above it are still
// found on the routes, as in Contour.
func ownConditionsValid(parent, cond *Route, where string, st *status.Object) bool {
	// RouteError, as Contour's for an include's header and query
	// parameter conditions (IncludeError is for its paths).
	if err := headerConditionsValid(cond.Headers[len(parent.Headers):]); err != nil {
		st.AddError(contourv1.ConditionTypeRouteError, status.ReasonHeaderMatchConditionsNotValid, where+": "+err.Error())
		return false
	}
	if err := queryParamConditionsValid(cond.QueryParams[len(parent.QueryParams):]); err != nil {
		st.AddError(contourv1.ConditionTypeRouteError, status.ReasonQueryParameterMatchConditionsNotValid, where+": "+err.Error())
		return false
	}
	return true
}

// includeAtRoot: an include's conditions match every request of its
// parent (none, or prefixes that are all "/", and no header or query
// parameter condition). Contour does not count such includes as duplicates
// of one another (includeMatchConditionsIdentical): a proxy may include
// several children without conditions, and their routes are merged.
func includeAtRoot(conds []contourv1.MatchCondition) bool {
	for _, c := range conds {
		if strings.Trim(c.Prefix, "/") != "" || c.Exact != "" || c.Regex != "" || c.Header != nil || c.QueryParameter != nil {
			return false
		}
	}
	return true
}

// includedProxy resolves an include of p (at the end of chain); nil, with
// an error on p, when it names no HTTPProxy, a root, or one on the chain.
func (b *rootBuilder) includedProxy(p *contourv1.HTTPProxy, inc contourv1.Include, chain []types.NamespacedName, where string, st *status.Object) *contourv1.HTTPProxy {
	key := includeKey(p, inc)
	child := b.R.Proxy(key)
	switch {
	case child == nil:
		st.AddError(contourv1.ConditionTypeIncludeError, status.ReasonIncludeNotFound, fmt.Sprintf("%s: include %s not found", where, key))
	case child.Spec.VirtualHost != nil:
		st.AddError(contourv1.ConditionTypeIncludeError, status.ReasonRootIncludesRoot, fmt.Sprintf("%s: root httpproxy cannot delegate to another root httpproxy (%s)", where, key))
	case slices.Contains(chain, key):
		st.AddError(contourv1.ConditionTypeIncludeError, status.ReasonIncludeCreatesCycle, fmt.Sprintf("%s: include creates a delegation cycle: %s", where, chainString(append(chain, key))))
	default:
		return child
	}
	return nil
}

// includeKey is the HTTPProxy an include names (in p's namespace unless
// it says).
func includeKey(p *contourv1.HTTPProxy, inc contourv1.Include) types.NamespacedName {
	if inc.Namespace == "" {
		return core.NsName(p.Namespace, inc.Name)
	}
	return core.NsName(inc.Namespace, inc.Name)
}

// chainString renders an include path: "ns/a -> ns/b".
func chainString(chain []types.NamespacedName) string {
	names := make([]string, len(chain))
	for i, k := range chain {
		names[i] = k.String()
	}
	return strings.Join(names, " -> ")
}

// includePathRefused: "exact" or "regex" when the include has such a
// path condition, not allowed on includes, which match a prefix; else "".
func includePathRefused(inc contourv1.Include) string {
	for _, c := range inc.Conditions {
		switch {
		case c.Exact != "":
			return "exact"
		case c.Regex != "":
			return "regex"
		}
	}
	return ""
}
