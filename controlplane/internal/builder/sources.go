package builder

import (
	"cmp"
	"slices"
	"sync"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// Sources records which objects each part of the model came from, so that
// what Envoy later says about a resource (a rejection) can be reported on
// the objects behind it. It is a side table: the model itself does not
// carry it, and the translator never reads it. The tables are put together
// on first use from what the build recorded (one part per root, and one
// for the rest): only a rejection needs them, and merging them on every
// build would cost more than a build that reuses its roots.
type Sources struct {
	parts []*sourceTracker
	once  sync.Once
	// vhosts by FQDN: the root HTTPProxy and those it includes. clusters
	// by cluster name: the HTTPProxies whose routes, authorization or
	// processing use it, and the ExtensionService it stands for. secrets
	// by SDS secret name: the objects that use it.
	vhosts, clusters, secrets map[string][]objects.Ref
}

// VirtualHosts returns the objects behind each virtual host, by FQDN.
func (s *Sources) VirtualHosts() map[string][]objects.Ref { s.merge(); return s.vhosts }

// Clusters returns the objects behind each cluster, by name.
func (s *Sources) Clusters() map[string][]objects.Ref { s.merge(); return s.clusters }

// Secrets returns the objects behind each SDS secret, by name.
func (s *Sources) Secrets() map[string][]objects.Ref { s.merge(); return s.secrets }

func (s *Sources) merge() {
	s.once.Do(func() {
		vhosts, clusters, secrets := sourceSet{}, sourceSet{}, sourceSet{}
		for _, p := range s.parts {
			vhosts.addAll(p.vhosts)
			clusters.addAll(p.clusters)
			secrets.addAll(p.secrets)
		}
		s.vhosts, s.clusters, s.secrets = vhosts.sorted(), clusters.sorted(), secrets.sorted()
	})
}

// sourceSet collects sources without duplicates (a Service can back the
// routes of thousands of HTTPProxies: no linear searches).
type sourceSet map[string]map[objects.Ref]struct{}

func (s sourceSet) add(key string, refs ...objects.Ref) {
	m, ok := s[key]
	if !ok {
		m = map[objects.Ref]struct{}{}
		s[key] = m
	}
	for _, r := range refs {
		m[r] = struct{}{}
	}
}

// sorted turns the set into sorted lists.
func (s sourceSet) sorted() map[string][]objects.Ref {
	out := make(map[string][]objects.Ref, len(s))
	for k, m := range s {
		refs := make([]objects.Ref, 0, len(m))
		for r := range m {
			refs = append(refs, r)
		}
		slices.SortFunc(refs, compareRefs)
		out[k] = refs
	}
	return out
}

func compareRefs(a, b objects.Ref) int {
	return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}

// sourceTracker is what one root (or the rest of the build) records of
// Sources: plain lists, duplicates included, for each of ten thousand
// roots; Sources dedupes them when first asked.
type sourceTracker struct {
	vhosts, clusters, secrets sourceList
	// walked lists the HTTPProxies reached from the root being built.
	walked []objects.Ref
}

// sourceList records (key, object) pairs.
type sourceList []sourceRef

type sourceRef struct {
	key string
	ref objects.Ref
}

func (l *sourceList) add(key string, refs ...objects.Ref) {
	for _, r := range refs {
		*l = append(*l, sourceRef{key, r})
	}
}

func newSourceTracker() *sourceTracker { return &sourceTracker{} }

func (s sourceSet) addAll(l sourceList) {
	for _, e := range l {
		s.add(e.key, e.ref)
	}
}

func proxyRef(namespace, name string) objects.Ref {
	return objects.Ref{Kind: KindHTTPProxy, Namespace: namespace, Name: name}
}

// recordRootSources notes the objects behind a served root: the virtual
// host comes from every valid HTTPProxy walked from it; its certificate, client
// CA, authorization cluster and processor cluster from the root.
func (b *rootBuilder) recordRootSources(p *contourv1.HTTPProxy, fqdn string, secure *ir.SecureVirtualHost, auth *ir.ExtAuth, proc procScope) {
	root := proxyRef(p.Namespace, p.Name)
	for _, r := range b.out.sources.walked {
		// An invalid include contributes no routes.
		if o := b.out.status[r]; o == nil || o.Valid() {
			b.out.sources.vhosts.add(fqdn, r)
		}
	}
	if secure != nil {
		b.out.sources.secrets.add(secure.Secret, root)
		if cv := secure.ClientValidation; cv != nil && cv.CASecret != "" {
			b.out.sources.secrets.add(cv.CASecret, root)
		}
	}
	if auth != nil {
		b.out.sources.clusters.add(auth.Cluster, root)
	}
	if proc.own {
		b.out.sources.clusters.add(proc.effective.Cluster, root)
	}
}
