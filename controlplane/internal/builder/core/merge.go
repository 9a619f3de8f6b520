package core

import (
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// Merged is the build's output: the global stage's, with every root's
// merged in.
type Merged struct {
	Stage
	// clusters are the lists of clusters added, in order (Finish keeps
	// the first of a name: all of a name are the same); secrets are by
	// name, the first of a name.
	clusters [][]*ir.Cluster
	secrets  map[string]*ir.Secret
	// Visited holds the HTTPProxies without a virtual host reached from a
	// served root; UnservedBy, those reached from roots that are not,
	// with them.
	Visited    map[types.NamespacedName]bool
	UnservedBy map[types.NamespacedName][]string
}

// NewMerged begins the merged output with the global stage's.
func NewMerged(global Stage) *Merged {
	// Sized for the input, not grown on every rebuild. Only HTTPProxies
	// without a virtual host are recorded as visited (httpproxy.Apply).
	in := global.R.Snap.In
	children := 0
	for _, p := range in.HTTPProxies {
		if p.Spec.VirtualHost == nil {
			children++
		}
	}
	b := &Merged{Stage: global, clusters: make([][]*ir.Cluster, 0, len(in.HTTPProxies)+2), secrets: map[string]*ir.Secret{},
		Visited: make(map[types.NamespacedName]bool, children), UnservedBy: map[types.NamespacedName][]string{}}
	b.AddClusters(global.Out.Clusters)
	b.AddSecrets(global.Out.Secrets)
	return b
}

// AddClusters adds clusters; of one name the first is kept (all of a
// name are the same). cs is kept, not copied, and never modified: a root's
// list is one append, not a map write per cluster on every rebuild.
func (b *Merged) AddClusters(cs []*ir.Cluster) {
	if len(cs) > 0 {
		b.clusters = append(b.clusters, cs)
	}
}

// AddSecrets adds secrets; of one name the first is kept.
func (b *Merged) AddSecrets(ss []*ir.Secret) {
	for _, s := range ss {
		if _, ok := b.secrets[s.Name]; !ok {
			b.secrets[s.Name] = s
		}
	}
}

// Finish gives the clusters and secrets their Origins (the objects the
// roots and the global stage say use them), leaves out the secrets nothing
// served uses, and sorts the model's lists
// so that the translator's input is deterministic. The clusters and
// secrets are copies: the roots' (which a Memo may reuse) and the previous
// build's model are never modified. copies (nil for none) keeps the
// clusters' copies from one build to the next.
func (b *Merged) Finish(m *ir.Model, roots RootOrigins, copies *ClusterCopies) {
	global := byName(b.Out.ClusterUses)
	originsOf := func(name string) ir.Origins { return roots.Clusters.Origins(name).Union(global[name]) }
	n := 0
	for _, cs := range b.clusters {
		n += len(cs)
	}
	m.Clusters = slices.Grow(m.Clusters, n)
	before := len(m.Clusters)
	copies.start()
	var seen map[string]bool // without copies, which tell the first of a name
	if copies == nil {
		seen = make(map[string]bool, n)
	}
	for _, cs := range b.clusters {
		for _, c := range cs {
			switch {
			case copies != nil:
				if cp := copies.first(c, originsOf); cp != nil {
					m.Clusters = append(m.Clusters, cp)
				}
			case !seen[c.Name]:
				seen[c.Name] = true
				m.Clusters = append(m.Clusters, copies.copy(c, originsOf(c.Name)))
			}
		}
	}
	copies.sweep(len(m.Clusters) - before)
	m.Clusters = copies.sort(m.Clusters)
	global = byName(b.Out.SecretUses)
	for name, s := range b.secrets {
		o := *s
		o.Origins = roots.Secrets.Origins(name).Union(global[name])
		if len(o.Origins) == 0 {
			// Read for an object that turned out invalid: nothing served
			// uses it, and a private key goes to Envoy only when needed.
			continue
		}
		m.Secrets = append(m.Secrets, &o)
	}
	slices.SortFunc(m.Secrets, func(a, b *ir.Secret) int { return strings.Compare(a.Name, b.Name) })
	for _, l := range m.Listeners {
		sort.Slice(l.Insecure, func(i, j int) bool { return l.Insecure[i].FQDN < l.Insecure[j].FQDN })
		sort.Slice(l.Secure, func(i, j int) bool { return l.Secure[i].FQDN < l.Secure[j].FQDN })
		sort.Slice(l.TCPHosts, func(i, j int) bool { return l.TCPHosts[i].FQDN < l.TCPHosts[j].FQDN })
	}
	sort.Slice(m.Listeners, func(i, j int) bool { return m.Listeners[i].Name < m.Listeners[j].Name })
}

// NewModel is an empty model with the shared listeners, first.
func NewModel(opts Options) *ir.Model {
	return &ir.Model{Listeners: []*ir.Listener{
		{Name: ir.HTTPListenerName, Address: opts.HTTP.Address, Port: opts.HTTP.Port},
		{Name: ir.HTTPSListenerName, Address: opts.HTTPS.Address, Port: opts.HTTPS.Port, TLS: true},
	}}
}

// SharedListeners are m's shared HTTP and HTTPS listeners (newModel's
// first two, until finish sorts them).
func SharedListeners(m *ir.Model) (http, https *ir.Listener) {
	return m.Listener(ir.HTTPListenerName), m.Listener(ir.HTTPSListenerName)
}
