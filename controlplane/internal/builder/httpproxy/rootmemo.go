package httpproxy

import (
	"slices"

	"k8s.io/apimachinery/pkg/types"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
)

// RootMemo keeps the result of each root HTTPProxy (buildRoot) and what
// it read from one build to the next (in Memo; the rules never see it). A
// root's result is reused only when the root and every object it looked
// up read the same (same.go); Memo drops it all when a global input
// changes.
type RootMemo struct {
	roots map[types.NamespacedName]*RootResult
	// clusters and secrets hold the origins of the roots' clusters and
	// secrets: who uses them.
	clusters, secrets core.OriginsMap
	// hits and misses count the roots of the last build.
	hits, misses int
}

// NewRootMemo is an empty roots memo.
func NewRootMemo() *RootMemo {
	return &RootMemo{roots: map[types.NamespacedName]*RootResult{}, clusters: core.OriginsMap{}, secrets: core.OriginsMap{}}
}

// Start begins a build: the counts are the build's.
func (m *RootMemo) Start() {
	if m != nil {
		m.hits, m.misses = 0, 0
	}
}

// Counts are the roots reused and built in the last build.
func (m *RootMemo) Counts() (hits, misses int) {
	if m == nil {
		return 0, 0
	}
	return m.hits, m.misses
}

// Root returns the result of root p: the previous build's if it still
// holds, built otherwise.
func (m *RootMemo) Root(s *core.Snapshot, p *contourv1.HTTPProxy, dup string) *RootResult {
	if m == nil {
		return BuildRoot(s, p, dup)
	}
	if prev := m.roots[core.NsName(p.Namespace, p.Name)]; prev != nil && prev.Holds(s, p, dup) {
		m.hits++
		return prev
	}
	m.misses++
	r := BuildRoot(s, p, dup)
	r.stamp()
	return r
}

// stamp gives the hosts of a root built anew new versions: they keep them
// while the memo reuses r, whose hosts are never modified.
func (r *RootResult) stamp() {
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

// Keep remembers the roots of this build for the next one, and returns
// who uses their clusters and secrets: gathered afresh without a memo;
// with one, the last build's, gathered again only for the names used by
// roots that are new, gone, or built again with other uses (a change
// rarely changes what a root uses, and gathering the uses of ten thousand
// roots would cost more than building the one that changed).
func (m *RootMemo) Keep(results []*RootResult) core.RootOrigins {
	if m == nil {
		c, s := gather(results, nil, nil)
		return core.RootOrigins{Clusters: c, Secrets: s}
	}
	clusters, secrets := map[string]bool{}, map[string]bool{}
	changed := func(r *RootResult) {
		for _, u := range r.ClusterUses {
			clusters[u.Name] = true
		}
		for _, u := range r.SecretUses {
			secrets[u.Name] = true
		}
	}
	// m.roots is updated in place: at scale a change replaces one
	// result of thousands.
	for _, r := range results {
		k := core.NsName(r.self.Namespace, r.self.Name)
		switch prev := m.roots[k]; {
		case prev == r:
			continue
		case prev == nil:
			changed(r)
		case !slices.Equal(prev.ClusterUses, r.ClusterUses) || !slices.Equal(prev.SecretUses, r.SecretUses):
			changed(prev)
			changed(r)
		}
		m.roots[k] = r
	}
	if len(m.roots) != len(results) {
		// Roots are gone: they are the ones this build did not give.
		now := make(map[types.NamespacedName]bool, len(results))
		for _, r := range results {
			now[core.NsName(r.self.Namespace, r.self.Name)] = true
		}
		for k, prev := range m.roots {
			if !now[k] {
				changed(prev)
				delete(m.roots, k)
			}
		}
	}
	if len(clusters) > 0 || len(secrets) > 0 {
		c, s := gather(results, clusters, secrets)
		m.clusters.Update(c, clusters)
		m.secrets.Update(s, secrets)
	}
	return core.RootOrigins{Clusters: m.clusters, Secrets: m.secrets}
}

// Holds reports whether building root p with dup against s would give r
// again: the same root, and every lookup answers the same.
func (r *RootResult) Holds(s *core.Snapshot, p *contourv1.HTTPProxy, dup string) bool {
	return core.SameObject(r.self, p) && r.dup == dup && r.reads.Same(s)
}
