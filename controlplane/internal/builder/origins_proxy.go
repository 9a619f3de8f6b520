package builder

import (
	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// gather collects the uses of results; with only, those of the names in
// them.
func gather(results []*rootResult, onlyClusters, onlySecrets map[string]bool) (clusters, secrets gathered) {
	clusters, secrets = gathered{}, gathered{}
	for _, r := range results {
		self := proxyRef(r.self.Namespace, r.self.Name)
		clusters.add(self, r.clusterUses, onlyClusters)
		secrets.add(self, r.secretUses, onlySecrets)
	}
	return clusters, secrets
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
