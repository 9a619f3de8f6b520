package builder

import (
	"fmt"
	"slices"
	"strings"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// apply merges a root's result into the build. res is never modified: a
// Memo may reuse it in the next build.
func apply(b *merged, m *ir.Model, res *rootResult) {
	for ref, o := range res.status {
		g := b.statusOf(ref.Kind, ref.Namespace, ref.Name, o.Generation)
		for _, p := range o.Errors {
			g.AddError(p.Type, p.Reason, p.Message)
		}
		for _, p := range o.Warnings {
			g.AddWarning(p.Type, p.Reason, p.Message)
		}
	}
	for k := range res.visited {
		if res.served {
			b.visited[k] = true
		} else {
			b.unservedBy[k] = append(b.unservedBy[k], nn(res.self.Namespace, res.self.Name).String())
		}
	}
	http, https := sharedListeners(m)
	http.Insecure = append(http.Insecure, res.insecure...)
	if res.secure != nil {
		https.Secure = append(https.Secure, res.secure)
	}
	if res.tcp != nil {
		https.TCPHosts = append(https.TCPHosts, res.tcp)
	}
	if res.fallback != nil {
		if https.Fallback == nil {
			https.Fallback = &ir.FallbackChain{Secret: res.fallbackSecret}
		}
		https.Fallback.VirtualHosts = append(https.Fallback.VirtualHosts, res.fallback)
	}
	b.addClusters(res.clusters)
	b.addSecrets(res.secrets)
}

// markOrphans marks the HTTPProxies with no virtual host that no served
// root reached: one that only invalid roots include is not served either,
// and its status says so and names them.
func markOrphans(b *merged, snap *snapshot) {
	for _, p := range snap.in.HTTPProxies {
		k := nn(p.Namespace, p.Name)
		if !snap.served(p) || p.Spec.VirtualHost != nil || b.visited[k] {
			continue
		}
		st := b.proxyStatus(p)
		roots := b.unservedBy[k]
		if len(roots) > 0 && !st.Valid() {
			continue // its own errors say why
		}
		st.Orphaned = true
		if len(roots) > 0 {
			slices.Sort(roots)
			st.OrphanedMessage = fmt.Sprintf("this HTTPProxy is included only by root HTTPProxies that are invalid (%s): its routes are not served", strings.Join(slices.Compact(roots), ", "))
		}
	}
}
