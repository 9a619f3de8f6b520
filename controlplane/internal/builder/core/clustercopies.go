package core

import (
	"slices"
	"strings"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// ClusterCopies keeps, from one build to the next, the model's copy of
// each cluster (a root's cluster with the Origins of every object using
// it: Merged.Finish). When a cluster and its users are those of the last
// build, its copy is too: at scale a change leaves thousands of clusters
// as they were, and the translator's cache (translator.Cache) then
// recognises each by pointer instead of comparing it field by field. For
// one goroutine at a time; nil keeps nothing.
type ClusterCopies struct {
	byName map[string]*clusterCopy
	// build counts the builds; a copy not used by the last is forgotten.
	build uint64
	// sorted is the last build's list of copies, by name; kept counts
	// the copies the build running has reused so far. When it reused
	// them all and made none, its list is the last one, not sorted again.
	sorted []*ir.Cluster
	kept   int
	// block is where new records are made, a few hundred at a time: a
	// full build makes one per cluster, tens of thousands.
	block []clusterCopy
}

type clusterCopy struct {
	// from and origins are what the copy was made of.
	from    *ir.Cluster
	origins ir.Origins
	copy    *ir.Cluster
	used    uint64
}

// NewClusterCopies returns an empty ClusterCopies.
func NewClusterCopies() *ClusterCopies {
	return &ClusterCopies{byName: map[string]*clusterCopy{}}
}

func (cc *ClusterCopies) start() {
	if cc != nil {
		cc.build++
		cc.kept = 0
	}
}

// copy returns c with origins: the last build's copy when it was made of
// the same cluster (by pointer: results are never modified) and origins.
func (cc *ClusterCopies) copy(c *ir.Cluster, origins ir.Origins) *ir.Cluster {
	if cc != nil {
		if e, ok := cc.byName[c.Name]; ok && e.from == c && slices.Equal(e.origins, origins) {
			e.used = cc.build
			cc.kept++
			return e.copy
		}
	}
	o := *c
	o.Origins = origins
	if cc != nil {
		if len(cc.block) == cap(cc.block) {
			cc.block = make([]clusterCopy, 0, 256)
		}
		cc.block = append(cc.block, clusterCopy{from: c, origins: origins, copy: &o, used: cc.build})
		cc.byName[c.Name] = &cc.block[len(cc.block)-1]
	}
	return &o
}

// sort sorts the build's list of copies by name, or gives the last
// build's list when it holds the same copies (the build reused every copy
// of the last, and made none).
func (cc *ClusterCopies) sort(list []*ir.Cluster) []*ir.Cluster {
	if cc != nil && cc.kept == len(list) && len(cc.sorted) == len(list) {
		return append(list[:0], cc.sorted...)
	}
	slices.SortFunc(list, func(a, b *ir.Cluster) int { return strings.Compare(a.Name, b.Name) })
	if cc != nil {
		cc.sorted = slices.Clone(list)
	}
	return list
}

// sweep forgets the copies the build of n clusters did not use.
func (cc *ClusterCopies) sweep(n int) {
	if cc == nil || len(cc.byName) == n {
		return
	}
	for name, e := range cc.byName {
		if e.used != cc.build {
			delete(cc.byName, name)
		}
	}
}
