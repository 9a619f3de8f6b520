package ir

import (
	"slices"
	"strings"

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
	out := make(Origins, 0, len(o)+len(other))
	i, j := 0, 0
	for i < len(o) && j < len(other) {
		switch c := CompareRefs(o[i], other[j]); {
		case c < 0:
			out = append(out, o[i])
			i++
		case c > 0:
			out = append(out, other[j])
			j++
		default:
			out = append(out, o[i])
			i, j = i+1, j+1
		}
	}
	out = append(out, o[i:]...)
	return append(out, other[j:]...)
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
	if c := strings.Compare(a.Kind, b.Kind); c != 0 {
		return c
	}
	if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}
