package core

import (
	"slices"

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
	byName map[string]clusterCopy
	// build counts the builds; a copy not used by the last is forgotten.
	build uint64
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
	return &ClusterCopies{byName: map[string]clusterCopy{}}
}

func (cc *ClusterCopies) start() {
	if cc != nil {
		cc.build++
	}
}

// copy returns c with origins: the last build's copy when it was made of
// the same cluster (by pointer: results are never modified) and origins.
func (cc *ClusterCopies) copy(c *ir.Cluster, origins ir.Origins) *ir.Cluster {
	if cc != nil {
		if e, ok := cc.byName[c.Name]; ok && e.from == c && slices.Equal(e.origins, origins) {
			e.used = cc.build
			cc.byName[c.Name] = e
			return e.copy
		}
	}
	o := *c
	o.Origins = origins
	if cc != nil {
		cc.byName[c.Name] = clusterCopy{from: c, origins: origins, copy: &o, used: cc.build}
	}
	return &o
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
