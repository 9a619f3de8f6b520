package builder

import (
	"slices"

	"k8s.io/apimachinery/pkg/types"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
)

// rootMemo keeps the result of each root HTTPProxy (buildRoot) and what
// it read from one build to the next (in Memo; the rules never see it). A
// root's result is reused only when the root and every object it looked
// up read the same (same.go); Memo drops it all when a global input
// changes.
type rootMemo struct {
	roots map[types.NamespacedName]*rootResult
	// clusters and secrets hold the origins of the roots' clusters and
	// secrets: who uses them.
	clusters, secrets originsMap
	// hits and misses count the roots of the last build.
	hits, misses int
}

func newRootMemo() *rootMemo {
	return &rootMemo{roots: map[types.NamespacedName]*rootResult{}, clusters: originsMap{}, secrets: originsMap{}}
}

// start begins a build: the counts are the build's.
func (m *rootMemo) start() {
	if m != nil {
		m.hits, m.misses = 0, 0
	}
}

// counts are the roots reused and built in the last build.
func (m *rootMemo) counts() (hits, misses int) {
	if m == nil {
		return 0, 0
	}
	return m.hits, m.misses
}

// root returns the result of root p: the previous build's if it still
// holds, built otherwise.
func (m *rootMemo) root(s *snapshot, p *contourv1.HTTPProxy, dup string) *rootResult {
	if m == nil {
		return buildRoot(s, p, dup)
	}
	if prev := m.roots[nn(p.Namespace, p.Name)]; prev != nil && prev.holds(s, p, dup) {
		m.hits++
		return prev
	}
	m.misses++
	return buildRoot(s, p, dup)
}

// keep remembers the roots of this build for the next one, and returns
// who uses their clusters and secrets: gathered afresh without a memo;
// with one, the last build's, gathered again only for the names used by
// roots that are new, gone, or built again with other uses (a change
// rarely changes what a root uses, and gathering the uses of ten thousand
// roots would cost more than building the one that changed).
func (m *rootMemo) keep(results []*rootResult) rootOrigins {
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
