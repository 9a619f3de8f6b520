package ir

import (
	"cmp"
	"slices"

	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// Origins are the objects a part of the model came from (HTTPProxies,
// ExtensionServices), sorted and without duplicates: what Envoy says about
// the resources made of that part (a rejection) is reported on them. They
// are not Envoy configuration; the translator only passes them on.
type Origins []objects.Ref

// NewOrigins returns refs as Origins: sorted, deduplicated. refs may be
// reordered.
func NewOrigins(refs ...objects.Ref) Origins {
	if len(refs) == 0 {
		return nil
	}
	slices.SortFunc(refs, CompareRefs)
	return Origins(slices.Compact(refs))
}

// Union returns the origins of both (neither is modified; one of them when
// it holds the other, which is the common case: a host's filters come
// from its root).
func (o Origins) Union(other Origins) Origins {
	switch {
	case o.holds(other):
		return o
	case other.holds(o):
		return other
	}
	return NewOrigins(append(slices.Clone(o), other...)...)
}

func (o Origins) holds(other Origins) bool {
	for _, r := range other {
		if _, ok := slices.BinarySearchFunc(o, r, CompareRefs); !ok {
			return false
		}
	}
	return true
}

// CompareRefs orders references by kind, namespace and name.
func CompareRefs(a, b objects.Ref) int {
	return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}
