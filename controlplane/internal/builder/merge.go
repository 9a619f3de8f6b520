package builder

import (
	"sort"

	"k8s.io/apimachinery/pkg/types"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// merged is the build's output: the global stage's, with every root's
// merged in.
type merged struct {
	stage
	// clusters and secrets by name: the first of a name (all of a name
	// are the same).
	clusters map[string]*ir.Cluster
	secrets  map[string]*ir.Secret
	// visited holds the HTTPProxies reached from a served root;
	// unservedBy, those reached only from roots that are not, with them.
	visited    map[types.NamespacedName]bool
	unservedBy map[types.NamespacedName][]string
}

func newMerged(global stage) *merged {
	b := &merged{stage: global, clusters: map[string]*ir.Cluster{}, secrets: map[string]*ir.Secret{},
		visited: map[types.NamespacedName]bool{}, unservedBy: map[types.NamespacedName][]string{}}
	b.addClusters(global.out.clusters)
	b.addSecrets(global.out.secrets)
	return b
}

func (b *merged) addClusters(cs []*ir.Cluster) {
	for _, c := range cs {
		if _, ok := b.clusters[c.Name]; !ok {
			b.clusters[c.Name] = c
		}
	}
}

func (b *merged) addSecrets(ss []*ir.Secret) {
	for _, s := range ss {
		if _, ok := b.secrets[s.Name]; !ok {
			b.secrets[s.Name] = s
		}
	}
}

// finish gives the clusters and secrets their Origins (the objects the
// roots and the global stage say use them), leaves out the secrets nothing
// served uses, and sorts the model's lists
// so that the translator's input is deterministic. The clusters and
// secrets are copies: the roots' (which a Memo may reuse) and the previous
// build's model are never modified.
func (b *merged) finish(m *ir.Model, roots rootOrigins) {
	global := byName(b.out.clusterUses)
	for name, c := range b.clusters {
		o := *c
		o.Origins = roots.clusters.origins(name).Union(global[name])
		m.Clusters = append(m.Clusters, &o)
	}
	sort.Slice(m.Clusters, func(i, j int) bool { return m.Clusters[i].Name < m.Clusters[j].Name })
	global = byName(b.out.secretUses)
	for name, s := range b.secrets {
		o := *s
		o.Origins = roots.secrets.origins(name).Union(global[name])
		if len(o.Origins) == 0 {
			// Read for an object that turned out invalid: nothing served
			// uses it, and a private key goes to Envoy only when needed.
			continue
		}
		m.Secrets = append(m.Secrets, &o)
	}
	sort.Slice(m.Secrets, func(i, j int) bool { return m.Secrets[i].Name < m.Secrets[j].Name })
	for _, l := range m.Listeners {
		sort.Slice(l.Insecure, func(i, j int) bool { return l.Insecure[i].FQDN < l.Insecure[j].FQDN })
		sort.Slice(l.Secure, func(i, j int) bool { return l.Secure[i].FQDN < l.Secure[j].FQDN })
		sort.Slice(l.TCPHosts, func(i, j int) bool { return l.TCPHosts[i].FQDN < l.TCPHosts[j].FQDN })
	}
	sort.Slice(m.Listeners, func(i, j int) bool { return m.Listeners[i].Name < m.Listeners[j].Name })
}

// newModel is an empty model with the shared listeners, first.
func newModel(opts Options) *ir.Model {
	return &ir.Model{Listeners: []*ir.Listener{
		{Name: ir.HTTPListenerName, Address: opts.HTTP.Address, Port: opts.HTTP.Port},
		{Name: ir.HTTPSListenerName, Address: opts.HTTPS.Address, Port: opts.HTTPS.Port, TLS: true},
	}}
}

// sharedListeners are m's shared HTTP and HTTPS listeners (newModel's
// first two, until finish sorts them).
func sharedListeners(m *ir.Model) (http, https *ir.Listener) {
	return m.Listener(ir.HTTPListenerName), m.Listener(ir.HTTPSListenerName)
}
