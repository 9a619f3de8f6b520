package httpproxy

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// MarkLoadBalancer gives every served root its status.loadBalancer: where
// clients reach Envoy (envoyAddresses). A root that is not served gets
// none, and neither do the HTTPProxies it includes (their routes are
// reached through their roots' host names, not addresses of their own).
// It runs after the roots are merged, not inside a root's build: the
// Envoy Service's address is not one of a root's reads, so a Memo reusing
// a root still reports the Service's current address.
func MarkLoadBalancer(b *core.Merged, results []*RootResult, addrs []corev1.LoadBalancerIngress) {
	if len(addrs) == 0 {
		return
	}
	for _, res := range results {
		if !res.served {
			continue
		}
		ref := objects.Ref{Kind: core.KindHTTPProxy, Namespace: res.self.Namespace, Name: res.self.Name}
		if st := b.Out.Status[ref]; st != nil && st.Valid() {
			st.LoadBalancer = addrs
		}
	}
}
