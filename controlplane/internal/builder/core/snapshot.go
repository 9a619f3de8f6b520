package core

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// Snapshot is the read-only index of one build's input, completed by the
// global stage (global.go) with what every root depends on: the validated
// ExtensionServices and the global authorization and processing. Roots
// read it through a Resolver and never write to it; tlsCache only
// memoizes a pure function of its Secrets.
type Snapshot struct {
	Opts Options
	In   *objects.Set

	secrets  map[types.NamespacedName]*corev1.Secret
	Services map[types.NamespacedName]*corev1.Service
	slices   map[types.NamespacedName][]*discoveryv1.EndpointSlice
	// proxies holds the HTTPProxies of our class, the last one of a name
	// (a folder of files may hold two).
	Proxies     map[types.NamespacedName]*contourv1.HTTPProxy
	delegations []*contourv1.TLSCertificateDelegation

	// Set by the global stage.
	extensions map[types.NamespacedName]*Extension
	Global     Globals

	// tlsCache holds the checks of each TLS Secret and clusters the
	// clusters of Service ports by name (clusterFor): thousands of hosts
	// often share one certificate and a few Services.
	tlsCache map[types.NamespacedName]parsedSecret
	Clusters map[string]*ir.Cluster
	// ready memoizes the ready endpoints of Service ports (Backend): the
	// routes of thousands of roots name the same few. A pure function of
	// the snapshot's EndpointSlices, shared read-only.
	ready map[readyKey]readyEndpointsOf
	// extObjects are the objects of the extensions' kinds.
	extObjects map[ExtKey]*unstructured.Unstructured
	// proxyPolicies are the extensions' policies on HTTPProxies, one set
	// per kind (extpolicy.go).
	proxyPolicies []proxyPolicySet
	// changes are the names changed since the previous build's
	// snapshot (nil: not known).
	changes *Changes
}

// NewSnapshot indexes in for one build. prev (nil for none) is the
// previous build's index (Snapshot.Index): when in lines up with its
// input, it is patched, and the snapshot knows which names changed.
func NewSnapshot(in *objects.Set, opts Options, prev *Index) *Snapshot {
	s := &Snapshot{
		Opts: opts, In: in,
		delegations: in.Delegations,
		extensions:  map[types.NamespacedName]*Extension{},
		tlsCache:    map[types.NamespacedName]parsedSecret{},
	}
	var ok bool
	if s.changes, ok = s.patch(prev); ok {
		// A rebuild: the roots built again are few, and so are the
		// clusters and endpoints they look up.
		s.Clusters, s.ready = map[string]*ir.Cluster{}, map[readyKey]readyEndpointsOf{}
	} else {
		s.index()
	}
	s.indexExtensions()
	s.indexProxyPolicies()
	return s
}

// index indexes s's input afresh.
func (s *Snapshot) index() {
	in := s.In
	// Sized from the input: growing maps of tens of thousands of entries
	// one doubling at a time was ~5% of a full build.
	s.secrets = make(map[types.NamespacedName]*corev1.Secret, len(in.Secrets))
	s.Services = make(map[types.NamespacedName]*corev1.Service, len(in.Services))
	s.slices = make(map[types.NamespacedName][]*discoveryv1.EndpointSlice, len(in.Services))
	s.Proxies = make(map[types.NamespacedName]*contourv1.HTTPProxy, len(in.HTTPProxies))
	s.Clusters = make(map[string]*ir.Cluster, len(in.Services))
	s.ready = make(map[readyKey]readyEndpointsOf, len(in.Services))
	for _, o := range in.Secrets {
		s.secrets[NsName(o.Namespace, o.Name)] = o
	}
	for _, o := range in.Services {
		s.Services[NsName(o.Namespace, o.Name)] = o
	}
	for _, o := range in.EndpointSlices {
		if svc := o.Labels[discoveryv1.LabelServiceName]; svc != "" {
			k := NsName(o.Namespace, svc)
			s.slices[k] = append(s.slices[k], o)
		}
	}
	for _, p := range in.HTTPProxies {
		if s.ownsClass(ingressClass(p)) {
			s.Proxies[NsName(p.Namespace, p.Name)] = p
		}
	}
}

func (s *Snapshot) ownsClass(class string) bool {
	return class == "" || class == s.Opts.IngressClassName
}

// ingressClassAnnotations name an HTTPProxy's class as Contour reads them,
// before spec.ingressClassName: an object annotated for another
// controller must not be served here.
var ingressClassAnnotations = []string{"projectcontour.io/ingress.class", "kubernetes.io/ingress.class"}

// ingressClass is the class an HTTPProxy asks for: its annotations first,
// then spec.ingressClassName.
func ingressClass(p *contourv1.HTTPProxy) string {
	for _, a := range ingressClassAnnotations {
		if c := p.Annotations[a]; c != "" {
			return c
		}
	}
	return p.Spec.IngressClassName
}

// Served reports whether p is the HTTPProxy of its name this build serves
// (of our class, the last one of its name).
func (s *Snapshot) Served(p *contourv1.HTTPProxy) bool {
	return s.Proxies[NsName(p.Namespace, p.Name)] == p
}

// ServedProxies are the input's HTTPProxies this build serves (Served), in
// input order. When the map holds as many as the input, every one is
// served (of our class, no name twice): the input itself, without a lookup
// per HTTPProxy on every rebuild.
func (s *Snapshot) ServedProxies() []*contourv1.HTTPProxy {
	if len(s.Proxies) == len(s.In.HTTPProxies) {
		return s.In.HTTPProxies
	}
	out := make([]*contourv1.HTTPProxy, 0, len(s.Proxies))
	for _, p := range s.In.HTTPProxies {
		if s.Served(p) {
			out = append(out, p)
		}
	}
	return out
}

// delegated reports whether a TLSCertificateDelegation in the Secret's
// namespace lets namespace use it.
func (s *Snapshot) delegated(secret types.NamespacedName, namespace string) bool {
	for _, d := range s.delegations {
		if d.Namespace != secret.Namespace {
			continue
		}
		for _, cd := range d.Spec.Delegations {
			if cd.SecretName == secret.Name && (slices.Contains(cd.TargetNamespaces, namespace) || slices.Contains(cd.TargetNamespaces, "*")) {
				return true
			}
		}
	}
	return false
}

// NsName is the key of an object by namespace and name.
func NsName(namespace, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: namespace, Name: name}
}

// SplitRef parses "name" or "namespace/name", defaulting the namespace.
func SplitRef(ref, defaultNamespace string) types.NamespacedName {
	if ns, name, ok := strings.Cut(ref, "/"); ok {
		return NsName(ns, name)
	}
	return NsName(defaultNamespace, ref)
}
