package builder

import (
	"cmp"
	"slices"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
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

// tally counts, for each cluster or secret name, the roots that use it
// through each object. A Memo keeps it from one build to the next and
// counts only the roots that changed: recounting ten thousand roots'
// uses (and sorting them) on every rebuild would cost more than the
// rebuild of one root.
type tally map[string]*tallied

type tallied struct {
	refs map[objects.Ref]int
	// origins are refs' keys, sorted; nil when the keys changed since.
	// Never modified once set: models share them.
	origins ir.Origins
}

// add counts u n times (n < 0 uncounts it). A root built again is counted
// in before its previous result is counted out (Memo.keep): the objects
// using a name then stay the same, and so do its origins.
func (t tally) add(u uses, n int) {
	for _, e := range u {
		x := t[e.name]
		if x == nil {
			x = &tallied{refs: map[objects.Ref]int{}}
			t[e.name] = x
		}
		before := x.refs[e.ref]
		switch x.refs[e.ref] = before + n; {
		case x.refs[e.ref] == 0:
			delete(x.refs, e.ref)
			x.origins = nil
		case before == 0:
			x.origins = nil
		}
		if len(x.refs) == 0 {
			delete(t, e.name)
		}
	}
}

// origins returns the objects using name.
func (t tally) origins(name string) ir.Origins {
	x := t[name]
	if x == nil {
		return nil
	}
	if x.origins == nil {
		refs := make([]objects.Ref, 0, len(x.refs))
		for r := range x.refs {
			refs = append(refs, r)
		}
		x.origins = ir.NewOrigins(refs...)
	}
	return x.origins
}

// originsByName says which objects use each cluster or secret.
type originsByName interface{ origins(name string) ir.Origins }

// rootOrigins say which objects use the clusters and secrets of a build's
// roots.
type rootOrigins struct{ clusters, secrets originsByName }

// rootTallies are the tallies a Memo keeps.
type rootTallies struct{ clusters, secrets tally }

func newRootTallies() rootTallies { return rootTallies{clusters: tally{}, secrets: tally{}} }

func (t rootTallies) add(r *rootResult, n int) {
	t.clusters.add(r.clusterUses, n)
	t.secrets.add(r.secretUses, n)
}

func (t rootTallies) origins() rootOrigins { return rootOrigins{t.clusters, t.secrets} }

// gathered is what a build without a Memo uses instead of a tally: the
// uses of each name, the roots' own apart. Roots come sorted (objects.Set
// is) and so do their own uses, which are most: sorting only the rest
// saves most of the work.
type gathered map[string]*gatheredUses

type gatheredUses struct{ roots, others []objects.Ref }

func (g gathered) add(root objects.Ref, u uses) {
	for _, e := range u {
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

// gather collects the uses of results.
func gather(results []*rootResult) rootOrigins {
	clusters, secrets := gathered{}, gathered{}
	for _, r := range results {
		self := proxyRef(r.self.Namespace, r.self.Name)
		clusters.add(self, r.clusterUses)
		secrets.add(self, r.secretUses)
	}
	return rootOrigins{clusters, secrets}
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

func proxyRef(namespace, name string) objects.Ref {
	return objects.Ref{Kind: KindHTTPProxy, Namespace: namespace, Name: name}
}

// hostOrigins are the origins of a served root's virtual hosts: every
// valid HTTPProxy walked from it (an invalid include contributes no
// routes).
func (b *rootBuilder) hostOrigins() ir.Origins {
	refs := make([]objects.Ref, 0, len(b.walked))
	for _, r := range b.walked {
		if o := b.out.status[r]; o == nil || o.Valid() {
			refs = append(refs, r)
		}
	}
	return ir.NewOrigins(refs...)
}

// recordRootUses notes what a served root uses: its certificate, client
// CA, authorization cluster and processor cluster.
func (b *rootBuilder) recordRootUses(p *contourv1.HTTPProxy, secure *ir.SecureVirtualHost, auth *ir.ExtAuth, proc procScope) {
	root := proxyRef(p.Namespace, p.Name)
	if secure != nil {
		b.out.secretUses.add(secure.Secret, root)
		if cv := secure.ClientValidation; cv != nil && cv.CASecret != "" {
			b.out.secretUses.add(cv.CASecret, root)
		}
	}
	if auth != nil {
		b.out.clusterUses.add(auth.Cluster, root)
	}
	if proc.own {
		b.out.clusterUses.add(proc.effective.Cluster, root)
	}
}
