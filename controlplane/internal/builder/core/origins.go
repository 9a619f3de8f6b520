package core

import (
	"cmp"
	"slices"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// Uses records, by name, the objects that use a cluster or a secret.
// Clusters and secrets are shared by the roots, so their Origins are only
// known once every root is merged (merged.finish).
type Uses []Use

// Use is one use of a cluster or secret (by name) by an object.
type Use struct {
	Name string
	Ref  objects.Ref
}

// Add records that ref uses the cluster or secret name.
func (u *Uses) Add(name string, ref objects.Ref) { *u = append(*u, Use{name, ref}) }

// Compact sorts and deduplicates u in place: a root's routes often use
// one cluster many times.
func (u Uses) Compact() Uses {
	slices.SortFunc(u, func(a, b Use) int { return cmp.Or(cmp.Compare(a.Name, b.Name), ir.CompareRefs(a.Ref, b.Ref)) })
	return slices.Compact(u)
}

// OriginsByName says which objects use each cluster or secret.
type OriginsByName interface{ Origins(name string) ir.Origins }

// RootOrigins say which objects use the clusters and secrets of a build's
// roots.
type RootOrigins struct{ Clusters, Secrets OriginsByName }

// OriginsMap holds the origins of each name. A Memo keeps one from build to
// build: its slices are shared with the models built, never modified.
type OriginsMap map[string]ir.Origins

// Origins are the objects using name.
func (m OriginsMap) Origins(name string) ir.Origins { return m[name] }

// Gathered holds the uses of each name, the roots' own apart. Roots come
// sorted (objects.Set is) and so do their own uses, which are most:
// sorting only the rest saves most of the work.
type Gathered map[string]*gatheredUses

type gatheredUses struct{ roots, others []objects.Ref }

// Add gathers the uses u of root; with only, those of the names in it.
func (g Gathered) Add(root objects.Ref, u Uses, only map[string]bool) {
	for _, e := range u {
		if only != nil && !only[e.Name] {
			continue
		}
		x := g[e.Name]
		if x == nil {
			x = &gatheredUses{}
			g[e.Name] = x
		}
		if e.Ref == root {
			x.roots = append(x.roots, e.Ref)
		} else {
			x.others = append(x.others, e.Ref)
		}
	}
}

// Origins are the objects using name: its roots', then the others'.
func (g Gathered) Origins(name string) ir.Origins {
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

// Update recomputes the origins of the names in only from g.
func (m OriginsMap) Update(g Gathered, only map[string]bool) {
	for name := range only {
		if o := g.Origins(name); len(o) > 0 {
			m[name] = o
		} else {
			delete(m, name)
		}
	}
}

// byName collects uses by name.
func byName(u Uses) map[string]ir.Origins {
	m := map[string][]objects.Ref{}
	for _, e := range u {
		m[e.Name] = append(m[e.Name], e.Ref)
	}
	out := make(map[string]ir.Origins, len(m))
	for k, refs := range m {
		out[k] = ir.NewOrigins(refs...)
	}
	return out
}
