package builder

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"reflect"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// Memo remembers, from one build to the next, the result of each root
// HTTPProxy (buildRoot) and what it read, by the root's name. At scale a
// change touches one root, and building the other thousands again is most
// of a rebuild. A root's result is reused only when the root and every
// object it looked up have the same content as last time (sameContent,
// sameObject: the same version, or for our own kinds differing only in
// status) and nothing global changed (options, delegations,
// ExtensionServices); the result is the same as without the memo. A root
// built anew has its virtual hosts stamped (ir.VirtualHost.Stamp), which
// translator.Cache keys their translations by. docs/design/caches.md lists
// every cache, its key and what invalidates it. The rules never see it. A
// Memo is for one goroutine at a time; the zero value is not usable, use
// NewMemo.
type Memo struct {
	global globalInputs
	roots  map[types.NamespacedName]*rootResult
	// clusters and secrets hold the origins of the roots' clusters and
	// secrets: who uses them.
	clusters, secrets originsMap
	// gateway keeps the Gateway API routes' rules (gatewaymemo.go).
	gateway gatewayMemo
	// Hits and Misses count the roots of the last build.
	Hits, Misses int
}

// NewMemo returns an empty memo.
func NewMemo() *Memo {
	return &Memo{roots: map[types.NamespacedName]*rootResult{}, clusters: originsMap{}, secrets: originsMap{}}
}

// globalInputs are what every root depends on.
type globalInputs struct {
	opts        Options
	delegations []*contourv1.TLSCertificateDelegation
	// extensions fingerprints what roots read of the ExtensionServices
	// (and what the global filters were resolved from).
	extensions string
}

func (g *globalInputs) equal(o *globalInputs) bool {
	return g.extensions == o.extensions && slices.EqualFunc(g.delegations, o.delegations, sameObject) && reflect.DeepEqual(g.opts, o.opts)
}

// globalInputsOf the snapshot, after the global stage.
func globalInputsOf(s *snapshot) globalInputs {
	var ext []string
	for k, e := range s.extensions {
		cluster := ""
		if e.cluster != nil {
			cluster = e.cluster.Name
		}
		timeout := ""
		if e.timeout != nil {
			timeout = e.timeout.String()
		}
		ext = append(ext, strings.Join([]string{k.String(), cluster, e.authority, timeout, status.Summary(e.status)}, "\x00"))
	}
	sort.Strings(ext)
	return globalInputs{opts: s.opts, delegations: slices.Clone(s.in.Delegations), extensions: strings.Join(ext, "\x01")}
}

// start begins a build of s: the results of the previous build hold only
// if its global inputs are s's.
func (m *Memo) start(s *snapshot) {
	if m == nil {
		return
	}
	g := globalInputsOf(s)
	if !m.global.equal(&g) {
		m.roots, m.clusters, m.secrets = map[types.NamespacedName]*rootResult{}, originsMap{}, originsMap{}
		m.gateway.rules = nil
	}
	m.global = g
	m.Hits, m.Misses = 0, 0
}

// root returns the result of root p: the previous build's if it still
// holds, built otherwise.
func (m *Memo) root(s *snapshot, p *contourv1.HTTPProxy, dup string) *rootResult {
	if m == nil {
		return buildRoot(s, p, dup)
	}
	if prev := m.roots[nn(p.Namespace, p.Name)]; prev != nil && prev.holds(s, p, dup) {
		m.Hits++
		return prev
	}
	m.Misses++
	r := buildRoot(s, p, dup)
	r.stamp()
	return r
}

// stamp gives the hosts of a root built anew new versions: they keep them
// while the memo reuses r, whose hosts are never modified.
func (r *rootResult) stamp() {
	for _, vh := range r.insecure {
		vh.Stamp()
	}
	if r.secure != nil {
		r.secure.Stamp()
	}
	if r.fallback != nil {
		r.fallback.Stamp()
	}
}

// keep remembers the roots of this build for the next one, and returns
// who uses their clusters and secrets: gathered afresh without a memo;
// with one, the last build's, gathered again only for the names used by
// roots that are new, gone, or built again with other uses (a change
// rarely changes what a root uses, and gathering the uses of ten thousand
// roots would cost more than building the one that changed).
func (m *Memo) keep(results []*rootResult) rootOrigins {
	if m == nil {
		c, s := gather(results, nil, nil)
		return rootOrigins{c, s}
	}
	clusters, secrets := map[string]bool{}, map[string]bool{}
	changed := func(r *rootResult) {
		for _, u := range r.clusterUses {
			clusters[u.name] = true
		}
		for _, u := range r.secretUses {
			secrets[u.name] = true
		}
	}
	roots := make(map[types.NamespacedName]*rootResult, len(results))
	for _, r := range results {
		k := nn(r.self.Namespace, r.self.Name)
		roots[k] = r
		switch prev := m.roots[k]; {
		case prev == r:
		case prev == nil:
			changed(r)
		case !slices.Equal(prev.clusterUses, r.clusterUses) || !slices.Equal(prev.secretUses, r.secretUses):
			changed(prev)
			changed(r)
		}
	}
	for k, prev := range m.roots {
		if roots[k] == nil {
			changed(prev)
		}
	}
	m.roots = roots
	if len(clusters) > 0 || len(secrets) > 0 {
		c, s := gather(results, clusters, secrets)
		m.clusters.update(c, clusters)
		m.secrets.update(s, secrets)
	}
	return rootOrigins{m.clusters, m.secrets}
}

// holds reports whether building root p with dup against s would give r
// again: the same root, and every lookup answers the same.
func (r *rootResult) holds(s *snapshot, p *contourv1.HTTPProxy, dup string) bool {
	return sameObject(r.self, p) && r.dup == dup && r.reads.same(s)
}

func (rd *reads) same(s *snapshot) bool {
	return sameDeps(rd.proxies, s.proxies, sameObject) &&
		sameDeps(rd.services, s.services, sameContent[*corev1.Service]) &&
		sameDeps(rd.slices, s.slices, func(a, b []*discoveryv1.EndpointSlice) bool { return slices.EqualFunc(a, b, sameContent) }) &&
		sameDeps(rd.secrets, s.secrets, sameContent[*corev1.Secret]) &&
		!slices.ContainsFunc(rd.warnings, func(d warningDep) bool { return !slices.Equal(s.in.Warnings[d.ref], d.got) }) &&
		!slices.ContainsFunc(rd.extObjects, func(d dep2[extKey, *unstructured.Unstructured]) bool { return !sameObject(s.extObjects[d.key], d.got) })
}

// sameDeps reports whether every lookup in deps answers the same in now.
func sameDeps[T any](deps []dep[T], now map[types.NamespacedName]T, same func(a, b T) bool) bool {
	for _, d := range deps {
		if !same(now[d.key], d.got) {
			return false
		}
	}
	return true
}

// object is what the memo compares: a Kubernetes object by pointer.
type object interface {
	comparable
	metav1.Object
}

// sameContent reports whether a and b have the same content, status
// included: the same version (objects.SameVersion), or the same object
// (a fast path: the build never modifies its input, so one object has one
// content; hand-built objects have no version).
func sameContent[T object](a, b T) bool {
	var zero T
	return a == b || a != zero && b != zero && objects.SameVersion(a, b)
}

// sameObject reports whether a build reads the same from a and b, objects
// of our own kinds, whose status the build does not read: the same content,
// or b differs from a only in its status (objects.SameButStatus: our own
// status writes, back from the API server with a new resourceVersion).
func sameObject[T object](a, b T) bool {
	var zero T
	return sameContent(a, b) || a != zero && b != zero && objects.SameButStatus(a, b)
}
