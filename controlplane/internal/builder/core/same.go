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
// s.
func (rd *Reads) Same(s *Snapshot) bool {
	return sameDeps(rd.proxies, s.Proxies, SameObject) &&
		sameDeps(rd.services, s.Services, equal[*corev1.Service]) &&
		sameDeps(rd.slices, s.slices, slices.Equal[[]*discoveryv1.EndpointSlice]) &&
		sameDeps(rd.secrets, s.secrets, equal[*corev1.Secret]) &&
		!slices.ContainsFunc(rd.warnings, func(d warningDep) bool { return !slices.Equal(s.In.Warnings[d.ref], d.got) }) &&
		!slices.ContainsFunc(rd.extObjects, func(d dep2[ExtKey, *unstructured.Unstructured]) bool { return !SameObject(s.extObjects[d.key], d.got) })
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

func equal[T comparable](a, b T) bool { return a == b }

// SameObject reports whether a build reads the same from a and b: they
// are the same object, or b differs from a only in its status (see
// objects.SameButStatus: our own status writes, back from the API server).
func SameObject[T interface {
	comparable
	metav1.Object
}](a, b T) bool {
	var zero T
	return a == b || a != zero && b != zero && objects.SameButStatus(a, b)
}
