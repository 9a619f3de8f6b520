package httpproxy

import (
	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// gather collects the uses of results; with only, those of the names in
// them.
func gather(results []*RootResult, onlyClusters, onlySecrets map[string]bool) (clusters, secrets core.Gathered) {
	clusters, secrets = core.Gathered{}, core.Gathered{}
	for _, r := range results {
		self := ProxyRef(r.self.Namespace, r.self.Name)
		clusters.Add(self, r.ClusterUses, onlyClusters)
		secrets.Add(self, r.SecretUses, onlySecrets)
	}
	return clusters, secrets
}

// ProxyRef is the reference of an HTTPProxy in status and origins.
func ProxyRef(namespace, name string) objects.Ref {
	return objects.Ref{Kind: core.KindHTTPProxy, Namespace: namespace, Name: name}
}

// hostOrigins are the origins of a served root's virtual hosts: every
// valid HTTPProxy walked from it (an invalid include contributes no
// routes).
func (b *rootBuilder) hostOrigins() ir.Origins {
	refs := make([]objects.Ref, 0, len(b.walked))
	for _, r := range b.walked {
		if o := b.Out.Status[r]; o == nil || o.Valid() {
			refs = append(refs, r)
		}
	}
	return ir.NewOrigins(refs...)
}

// recordRootUses notes what a served root uses: its certificate, client
// CA, authorization cluster and processor cluster.
func (b *rootBuilder) recordRootUses(p *contourv1.HTTPProxy, secure *ir.SecureVirtualHost, auth *ir.ExtAuth, proc procScope) {
	root := ProxyRef(p.Namespace, p.Name)
	if secure != nil {
		b.Out.SecretUses.Add(secure.Secret, root)
		if cv := secure.ClientValidation; cv != nil && cv.CASecret != "" {
			b.Out.SecretUses.Add(cv.CASecret, root)
		}
	}
	if auth != nil {
		b.Out.ClusterUses.Add(auth.Cluster, root)
	}
	if proc.own {
		b.Out.ClusterUses.Add(proc.effective.Cluster, root)
	}
}
