package httpproxy

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/types"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/config"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// expansion is what the root being built has expanded to through its
// includes, checked against the limits of the configuration file. An
// HTTPProxy included through n paths with different conditions is built n
// times, so 21 tiny HTTPProxies each including the next twice make a
// million routes: any tenant whose HTTPProxy is included could exhaust the
// control plane. Past a limit the walk stops at once and the root is not
// served (fail closed, as for any invalid root).
type expansion struct {
	root   *contourv1.HTTPProxy
	limits config.Limits
	// routes and includes count the routes and include entries of every
	// HTTPProxy built, once per build (and reused routes again).
	routes, includes int
	// exceeded: a limit was crossed; every walk returns at once.
	exceeded bool
	// deepest is the deepest include level reached (the root is 0).
	deepest int
	// built holds each HTTPProxy's walk under each inherited match
	// (walkKey): included again under the same match, it is not built
	// again.
	built map[string]builtWalk
	// first holds each HTTPProxy's first walk until it is included again:
	// most are included once per root, and encoding their match into a
	// walkKey was 5% of a build's bytes for nothing. Its key is computed
	// on the second include (the match is a fresh value, never modified:
	// mergeConditions clones).
	first map[types.NamespacedName]firstWalk
	// invalid counts the HTTPProxies found invalid so far (invalidSeen):
	// a walk built before the last of them could now differ (the routes of
	// an HTTPProxy found invalid are not served), so it is not reused.
	invalid     int
	invalidSeen map[types.NamespacedName]bool
	// cyclic says whether the include graph has a cycle (nil: not known
	// yet). A walk's cycle errors depend on the include path, so with a
	// cycle nothing is reused.
	cyclic *bool
}

// ReuseWalks is off only in the test that compares reused walks with
// walks built again.
var ReuseWalks = true

type firstWalk struct {
	cond  Route
	w     builtWalk
	keyed bool
}

type builtWalk struct {
	routes  []Route
	height  int // include levels below the HTTPProxy
	invalid int // expansion.invalid when it was built
}

func newExpansion(root *contourv1.HTTPProxy, l config.Limits) *expansion {
	// The maps are made on first use: most roots include nothing twice.
	return &expansion{root: root, limits: l.WithDefaults()}
}

// expand counts the routes and include entries of p, which is being built
// at the end of chain; false once a limit is crossed.
func (b *rootBuilder) expand(chain []types.NamespacedName, p *contourv1.HTTPProxy) bool {
	e := b.exp
	if e.exceeded {
		return false
	}
	e.routes += len(p.Spec.Routes)
	e.includes += len(p.Spec.Includes)
	switch {
	case e.routes > e.limits.MaxRoutesPerVirtualHost:
		b.exceed(chain, e.routesLimit())
	case e.includes > e.limits.MaxIncludesPerRoot:
		b.exceed(chain, fmt.Sprintf("more than %d includes (limits.maxIncludesPerRoot; an include counts once per include path)", e.limits.MaxIncludesPerRoot))
	}
	return !e.exceeded
}

func (e *expansion) routesLimit() string {
	return fmt.Sprintf("more than %d routes (limits.maxRoutesPerVirtualHost; a route of an included HTTPProxy counts once per include path)", e.limits.MaxRoutesPerVirtualHost)
}

// include builds child, included by the HTTPProxy at the end of chain
// under the inherited match cond, or reuses its build under the same
// match. ok is false once a limit is crossed: the root is not served.
func (b *rootBuilder) include(child *contourv1.HTTPProxy, chain []types.NamespacedName, cond Route, scope authScope) (routes []Route, ok bool) {
	e := b.exp
	childKey := core.NsName(child.Namespace, child.Name)
	depth := len(chain) // chain[0] is the root, at depth 0
	if depth > e.limits.MaxIncludeDepth {
		b.exceed(append(chain[:len(chain):len(chain)], childKey), fmt.Sprintf("more than %d HTTPProxies deep (limits.maxIncludeDepth)", e.limits.MaxIncludeDepth))
		return nil, false
	}
	key := e.keyOf(childKey, cond)
	if w, found := e.built[key]; found && key != "" && ReuseWalks && w.invalid == e.invalid && depth+w.height <= e.limits.MaxIncludeDepth && !b.cyclic() {
		if e.routes += len(w.routes); e.routes > e.limits.MaxRoutesPerVirtualHost {
			b.exceed(append(chain[:len(chain):len(chain)], childKey), e.routesLimit())
			return nil, false
		}
		e.deepest = max(e.deepest, depth+w.height)
		return w.routes, true
	}
	outer := e.deepest
	e.deepest = depth
	routes = b.walk(child, chain, cond, scope)
	if e.exceeded {
		return nil, false
	}
	height := e.deepest - depth
	e.deepest = max(outer, e.deepest)
	if !b.ProxyStatus(child).Valid() && !e.invalidSeen[childKey] {
		if e.invalidSeen == nil {
			e.invalidSeen = map[types.NamespacedName]bool{}
		}
		e.invalidSeen[childKey] = true
		e.invalid++
	}
	e.keep(childKey, cond, key, builtWalk{routes: routes, height: height, invalid: e.invalid})
	return routes, true
}

// keyOf is the walkKey of child under cond, "" while child has not been
// built under this root (nothing to reuse); on its second include, its
// first walk gets its key too.
func (e *expansion) keyOf(child types.NamespacedName, cond Route) string {
	f, again := e.first[child]
	if !again {
		return ""
	}
	if !f.keyed {
		if k := walkKey(child, f.cond); k != "" {
			e.remember(k, f.w)
		}
		f.keyed = true
		e.first[child] = f
	}
	return walkKey(child, cond)
}

// keep remembers child's walk w under cond (key: keyOf's).
func (e *expansion) keep(child types.NamespacedName, cond Route, key string, w builtWalk) {
	if _, again := e.first[child]; !again {
		if e.first == nil {
			e.first = map[types.NamespacedName]firstWalk{} // a root without includes needs none
		}
		e.first[child] = firstWalk{cond: cond, w: w}
	} else if key != "" {
		e.remember(key, w)
	}
}

// remember keeps a walk for reuse under its key.
func (e *expansion) remember(key string, w builtWalk) {
	if e.built == nil {
		e.built = map[string]builtWalk{}
	}
	e.built[key] = w
}

// walkKey names an HTTPProxy's build under an inherited match: the match
// is all a build depends on besides the root (which is fixed). "" when
// the match cannot be encoded: not reused.
func walkKey(k types.NamespacedName, cond Route) string {
	j, err := json.Marshal(cond.Route)
	if err != nil || cond.permitInsecure {
		return ""
	}
	return k.String() + "\x00" + string(j)
}

// exceed records that the root's expansion crossed a limit (what) on path,
// the include path from the root: an error on the root and on every
// HTTPProxy of the path, so that the tenants concerned see it. The walk
// stops there.
func (b *rootBuilder) exceed(path []types.NamespacedName, what string) {
	e := b.exp
	e.exceeded = true
	at := chainString(path)
	for i, k := range path {
		msg := fmt.Sprintf("this root expands to %s at %s: it is not served", what, at)
		if i > 0 {
			msg = fmt.Sprintf("root HTTPProxy %s expands to %s at %s, which includes this HTTPProxy: the root is not served", path[0], what, at)
		}
		b.ProxyStatus(b.R.Proxy(k)).AddError(contourv1.ConditionTypeIncludeError, status.ReasonIncludeLimitExceeded, msg)
	}
	// The HTTPProxies the walk did not reach are still included: not
	// orphans.
	b.includeGraph(e.root, true)
}

// cyclic reports (once per root) whether the root's include graph has a
// cycle.
func (b *rootBuilder) cyclic() bool {
	e := b.exp
	if e.cyclic == nil {
		c := b.includeGraph(e.root, false)
		e.cyclic = &c
	}
	return *e.cyclic
}

// includeGraph visits every HTTPProxy the root includes, directly or not,
// once whatever the conditions, and reports whether the includes form a
// cycle. mark marks them visited, with a status.
func (b *rootBuilder) includeGraph(root *contourv1.HTTPProxy, mark bool) (cyclic bool) {
	const inProgress, done = 1, 2
	state := map[types.NamespacedName]int{}
	var visit func(p *contourv1.HTTPProxy)
	visit = func(p *contourv1.HTTPProxy) {
		k := core.NsName(p.Namespace, p.Name)
		state[k] = inProgress
		if mark {
			b.res.visited = append(b.res.visited, k)
			b.ProxyStatus(p)
		}
		for _, inc := range p.Spec.Includes {
			ns := inc.Namespace
			if ns == "" {
				ns = p.Namespace
			}
			ck := core.NsName(ns, inc.Name)
			switch state[ck] {
			case inProgress:
				cyclic = true
			case 0:
				if c := b.R.Proxy(ck); c != nil && c.Spec.VirtualHost == nil {
					visit(c)
				}
			}
		}
		state[k] = done
	}
	visit(root)
	return cyclic
}
