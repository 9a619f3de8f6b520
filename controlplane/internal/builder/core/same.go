package core

import (
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// Same reports whether every lookup recorded in rd answers the same in
// s. The lookups held against the previous build's snapshot (a memo keeps
// only the results of the last build): when the snapshot knows which names
// changed since (Changes), only those are looked up again.
func (rd *Reads) Same(s *Snapshot) bool {
	ch, known := s.changes, s.changes != nil
	if !known {
		ch = &Changes{}
	}
	return sameAt(rd.proxies, s.Proxies, ch.proxies, known, SameObject) &&
		sameAt(rd.services, s.Services, ch.services, known, sameContent[*corev1.Service]) &&
		sameAt(rd.slices, s.slices, ch.slices, known, func(a, b []*discoveryv1.EndpointSlice) bool { return slices.EqualFunc(a, b, sameContent) }) &&
		sameAt(rd.secrets, s.secrets, ch.secrets, known, sameContent[*corev1.Secret]) &&
		!slices.ContainsFunc(rd.warnings, func(d warningDep) bool { return !slices.Equal(s.In.Warnings[d.ref], d.got) }) &&
		!slices.ContainsFunc(rd.extObjects, func(d dep2[ExtKey, *unstructured.Unstructured]) bool { return !SameObject(s.extObjects[d.key], d.got) }) &&
		!slices.ContainsFunc(rd.proxyPolicies, func(d dep[[]*ProxyPolicy]) bool { return !sameProxyPolicies(s.proxyPoliciesOf(d.key), d.got) })
}

// sameDeps reports whether every lookup in deps answers the same in now.
func sameDeps[T any](deps []dep[T], now map[types.NamespacedName]T, same func(a, b T) bool) bool {
	for _, d := range deps {
		if !same(now[d.key], d.got) {
			return false
		}
	}
	return true
}

// object is what the memo compares: a Kubernetes object by pointer.
type object interface {
	comparable
	metav1.Object
}

// sameContent reports whether a and b have the same content, status
// included: the same version (objects.SameVersion), or the same object
// (a fast path: the build never modifies its input, so one object has one
// content; hand-built objects have no version).
func sameContent[T object](a, b T) bool {
	var zero T
	return a == b || a != zero && b != zero && objects.SameVersion(a, b)
}

// SameObject reports whether a build reads the same from a and b, objects
// of our own kinds, whose status the build does not read: the same content,
// or b differs from a only in its status (objects.SameButStatus: our own
// status writes, back from the API server with a new resourceVersion).
func SameObject[T object](a, b T) bool {
	var zero T
	return sameContent(a, b) || a != zero && b != zero && objects.SameButStatus(a, b)
}
