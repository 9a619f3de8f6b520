package httpproxy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// Apply merges a root's result into the build. res is never modified: a
// Memo may reuse it in the next build.
func Apply(b *core.Merged, m *ir.Model, res *RootResult) {
	for _, o := range res.statuses {
		g := b.StatusOf(o.Ref.Kind, o.Ref.Namespace, o.Ref.Name, o.Generation)
		for _, p := range o.Errors {
			g.AddError(p.Type, p.Reason, p.Message)
		}
		for _, p := range o.Warnings {
			g.AddWarning(p.Type, p.Reason, p.Message)
		}
	}
	self := core.NsName(res.self.Namespace, res.self.Name)
	for _, k := range res.visited {
		if k == self {
			// Only HTTPProxies without a virtual host can be orphans
			// (MarkOrphans): a root's own entry would be ten thousand
			// map writes per build that nothing reads.
			continue
		}
		if res.served {
			b.Visited[k] = true
		} else {
			b.UnservedBy[k] = append(b.UnservedBy[k], self.String())
		}
	}
	http, https := core.SharedListeners(m)
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
	b.AddClusters(res.Clusters)
	b.AddSecrets(res.Secrets)
}

// MarkOrphans marks the HTTPProxies with no virtual host that no served
// root reached: one that only invalid roots include is not served either,
// and its status says so and names them.
func MarkOrphans(b *core.Merged, snap *core.Snapshot) {
	for _, p := range snap.ServedProxies() {
		k := core.NsName(p.Namespace, p.Name)
		if p.Spec.VirtualHost != nil || b.Visited[k] {
			continue
		}
		st := b.ProxyStatus(p)
		roots := b.UnservedBy[k]
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
