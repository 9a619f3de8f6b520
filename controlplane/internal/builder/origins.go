package builder

import (
	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// uses records, by name, the objects that use a cluster or a secret
// (repeats included). Clusters and secrets are shared by the roots, so
// their Origins are only known once every root is merged (merged.finish):
// each root records plain pairs, cheap for ten thousand roots.
type uses []use

type use struct {
	name string
	ref  objects.Ref
}

func (u *uses) add(name string, ref objects.Ref) { *u = append(*u, use{name, ref}) }

// byName collects the uses of every part of the build.
type usesByName map[string][]objects.Ref

func (m usesByName) addAll(u uses) {
	for _, e := range u {
		m[e.name] = append(m[e.name], e.ref)
	}
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
