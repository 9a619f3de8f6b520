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
	// fresh counts the names the build running added; replaced are its
	// new copies of names the last build had.
	fresh    int
	replaced []*ir.Cluster
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
		cc.kept, cc.fresh, cc.replaced = 0, 0, cc.replaced[:0]
	}
}

// copy returns c with origins: the last build's copy when it was made of
// the same cluster (by pointer: results are never modified) and origins.
func (cc *ClusterCopies) copy(c *ir.Cluster, origins ir.Origins) *ir.Cluster {
	if cc == nil {
		o := *c
		o.Origins = origins
		return &o
	}
	e, ok := cc.byName[c.Name]
	return cc.made(e, ok, c, origins)
}

// first is copy for the first cluster of its name in this build, with the
// origins originsOf gives; nil for a later one (all of a name are the
// same). One map lookup for both: at scale there are ten thousand.
func (cc *ClusterCopies) first(c *ir.Cluster, originsOf func(name string) ir.Origins) *ir.Cluster {
	e, ok := cc.byName[c.Name]
	if ok && e.used == cc.build {
		return nil
	}
	return cc.made(e, ok, c, originsOf(c.Name))
}

// made returns the copy of c with origins given e, the name's record (ok
// when there is one).
func (cc *ClusterCopies) made(e *clusterCopy, ok bool, c *ir.Cluster, origins ir.Origins) *ir.Cluster {
	if ok && e.from == c && slices.Equal(e.origins, origins) {
		e.used = cc.build
		cc.kept++
		return e.copy
	}
	o := *c
	o.Origins = origins
	if ok {
		cc.replaced = append(cc.replaced, &o)
		*e = clusterCopy{} // its block may outlive it: it holds nothing
	} else {
		cc.fresh++
	}
	if len(cc.block) == cap(cc.block) {
		cc.block = make([]clusterCopy, 0, 256)
	}
	cc.block = append(cc.block, clusterCopy{from: c, origins: origins, copy: &o, used: cc.build})
	cc.byName[c.Name] = &cc.block[len(cc.block)-1]
	return &o
}

// sort sorts the build's list of copies by name. When it holds the names
// of the last build (it added none, and has as many), that is the last
// build's sorted list with the copies made anew put in their places: a
// change replaces a few clusters of thousands.
func (cc *ClusterCopies) sort(list []*ir.Cluster) []*ir.Cluster {
	if cc != nil && cc.fresh == 0 && len(cc.sorted) == len(list) && cc.kept+len(cc.replaced) == len(list) {
		list = append(list[:0], cc.sorted...)
		for _, c := range cc.replaced {
			i, _ := slices.BinarySearchFunc(list, c.Name, func(x *ir.Cluster, name string) int { return strings.Compare(x.Name, name) })
			list[i] = c
		}
		cc.sorted = append(cc.sorted[:0], list...)
		return list
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
			*e = clusterCopy{}
			delete(cc.byName, name)
		}
	}
}
