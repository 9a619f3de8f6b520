package core

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// Resolver answers the lookups of one root's build in the snapshot and
// records each (what it returned, nil for "not found"): a root's result
// is a function of the root and of what it read, so the record is what
// tells a Memo whether the result still holds. The global inputs (options,
// ExtensionServices, delegations, global authorization and processing) are
// not recorded: the Memo compares them as a whole.
type Resolver struct {
	Snap *Snapshot
	// reads is nil for the global stage: nothing to record.
	Reads *Reads
}

// Reads are the objects one root looked up.
type Reads struct {
	proxies  []dep[*contourv1.HTTPProxy]
	services []dep[*corev1.Service]
	slices   []dep[[]*discoveryv1.EndpointSlice]
	secrets  []dep[*corev1.Secret]
	// warnings are the parse warnings of the objects it has findings on.
	warnings []warningDep
	// extObjects are the objects of the extensions' kinds it read.
	extObjects []dep2[ExtKey, *unstructured.Unstructured]
	// proxyPolicies are the extensions' policies it read that win on
	// HTTPProxies.
	proxyPolicies []dep[[]*ProxyPolicy]
}

// dep2 is one lookup by another key than a namespaced name.
type dep2[K comparable, T any] struct {
	key K
	got T
}

// dep is one lookup: its key and what it returned.
type dep[T any] struct {
	key types.NamespacedName
	got T
}

// Reserve makes room for n lookups of Services and of their endpoints.
func (r *Reads) Reserve(n int) {
	r.services = slices.Grow(r.services, n)
	r.slices = slices.Grow(r.slices, n)
}

// record adds a lookup to deps, unless it repeats the last one: a build
// reads one snapshot, where the same key finds the same object (a route's
// Service is looked up for each of its uses).
func record[T any](deps *[]dep[T], k types.NamespacedName, got T) {
	if n := len(*deps); n > 0 && (*deps)[n-1].key == k {
		return
	}
	*deps = append(*deps, dep[T]{k, got})
}

type warningDep struct {
	ref objects.Ref
	got []string
}

// Proxy looks up an HTTPProxy of the served class (nil: none).
func (r *Resolver) Proxy(k types.NamespacedName) *contourv1.HTTPProxy {
	p := r.Snap.Proxies[k]
	if r.Reads != nil {
		record(&r.Reads.proxies, k, p)
	}
	return p
}

func (r *Resolver) service(k types.NamespacedName) *corev1.Service {
	s := r.Snap.Services[k]
	if r.Reads != nil {
		record(&r.Reads.services, k, s)
	}
	return s
}

func (r *Resolver) endpointSlices(k types.NamespacedName) []*discoveryv1.EndpointSlice {
	s := r.Snap.slices[k]
	if r.Reads != nil {
		record(&r.Reads.slices, k, s)
	}
	return s
}

func (r *Resolver) secret(k types.NamespacedName) *corev1.Secret {
	s := r.Snap.secrets[k]
	if r.Reads != nil {
		record(&r.Reads.secrets, k, s)
	}
	return s
}

// ExtensionObject finds an object of an extension's kind.
func (r *Resolver) ExtensionObject(k ExtKey) *unstructured.Unstructured {
	u := r.Snap.extObjects[k]
	if r.Reads != nil {
		r.Reads.extObjects = append(r.Reads.extObjects, dep2[ExtKey, *unstructured.Unstructured]{k, u})
	}
	return u
}

// Warnings returns the strict decoder's complaints about an object.
func (r *Resolver) Warnings(ref objects.Ref) []string {
	ws := r.Snap.In.Warnings[ref]
	if r.Reads != nil {
		r.Reads.warnings = append(r.Reads.warnings, warningDep{ref, ws})
	}
	return ws
}

// The global inputs.

// Opts are the build's options (a global input: not recorded).
func (r *Resolver) Opts() *Options { return &r.Snap.Opts }

// Global are the global authorization, processing and rate limit
// service (a global input: not recorded).
func (r *Resolver) Global() *Globals { return &r.Snap.Global }

// Delegated reports whether a TLSCertificateDelegation lets namespace
// use the Secret (a global input: not recorded).
func (r *Resolver) Delegated(secret types.NamespacedName, namespace string) bool {
	return r.Snap.delegated(secret, namespace)
}

// Extension finds a valid ExtensionService; otherwise it says why not
// (reason and message). The reason is ExtensionServiceNotFound for a
// missing and for an invalid one alike, as Contour's (an invalid
// ExtensionService has no cluster, so Contour finds none); the message
// says which.
func (r *Resolver) Extension(namespace, name string) (ext *Extension, reason, message string) {
	e, ok := r.Snap.extensions[NsName(namespace, name)]
	if !ok {
		return nil, status.ReasonExtensionServiceNotFound, fmt.Sprintf("ExtensionService %q not found", namespace+"/"+name)
	}
	if e.Cluster == nil {
		return nil, status.ReasonExtensionServiceNotFound, fmt.Sprintf("ExtensionService %q is invalid: %s", namespace+"/"+name, status.Summary(e.status))
	}
	return e, "", ""
}
