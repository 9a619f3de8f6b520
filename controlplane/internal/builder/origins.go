package builder

import (
	"cmp"
	"slices"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// uses records, by name, the objects that use a cluster or a secret.
// Clusters and secrets are shared by the roots, so their Origins are only
// known once every root is merged (merged.finish).
type uses []use

type use struct {
	name string
	ref  objects.Ref
}

func (u *uses) add(name string, ref objects.Ref) { *u = append(*u, use{name, ref}) }

// compact sorts and deduplicates u in place: a root's routes often use
// one cluster many times.
func (u uses) compact() uses {
	slices.SortFunc(u, func(a, b use) int { return cmp.Or(cmp.Compare(a.name, b.name), ir.CompareRefs(a.ref, b.ref)) })
	return slices.Compact(u)
}

// originsByName says which objects use each cluster or secret.
type originsByName interface{ origins(name string) ir.Origins }

// rootOrigins say which objects use the clusters and secrets of a build's
// roots.
type rootOrigins struct{ clusters, secrets originsByName }

// originsMap holds the origins of each name. A Memo keeps one from build to
// build: its slices are shared with the models built, never modified.
type originsMap map[string]ir.Origins

func (m originsMap) origins(name string) ir.Origins { return m[name] }

// gathered holds the uses of each name, the roots' own apart. Roots come
// sorted (objects.Set is) and so do their own uses, which are most:
// sorting only the rest saves most of the work.
type gathered map[string]*gatheredUses

type gatheredUses struct{ roots, others []objects.Ref }

// add gathers the uses u of root; with only, those of the names in it.
func (g gathered) add(root objects.Ref, u uses, only map[string]bool) {
	for _, e := range u {
		if only != nil && !only[e.name] {
			continue
		}
		x := g[e.name]
		if x == nil {
			x = &gatheredUses{}
			g[e.name] = x
		}
		if e.ref == root {
			x.roots = append(x.roots, e.ref)
		} else {
			x.others = append(x.others, e.ref)
		}
	}
}

func (g gathered) origins(name string) ir.Origins {
	x := g[name]
	if x == nil {
		return nil
	}
	roots := ir.Origins(x.roots)
	if !slices.IsSortedFunc(roots, ir.CompareRefs) {
		roots = ir.NewOrigins(x.roots...)
	}
	return roots.Union(ir.NewOrigins(x.others...))
}

// update recomputes the origins of the names in only from g.
func (m originsMap) update(g gathered, only map[string]bool) {
	for name := range only {
		if o := g.origins(name); len(o) > 0 {
			m[name] = o
		} else {
			delete(m, name)
		}
	}
}

// byName collects uses by name.
func byName(u uses) map[string]ir.Origins {
	m := map[string][]objects.Ref{}
	for _, e := range u {
		m[e.name] = append(m[e.name], e.ref)
	}
	out := make(map[string]ir.Origins, len(m))
	for k, refs := range m {
		out[k] = ir.NewOrigins(refs...)
	}
	return out
}
