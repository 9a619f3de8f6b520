package gatewayapi

import (
	"k8s.io/apimachinery/pkg/types"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// grantIndex holds the ReferenceGrants by namespace: a grant lives in the
// namespace of the objects it lets others refer to.
type grantIndex map[string][]*gwapiv1.ReferenceGrant

func newGrantIndex(grants []*gwapiv1.ReferenceGrant) grantIndex {
	idx := grantIndex{}
	for _, g := range grants {
		idx[g.Namespace] = append(idx[g.Namespace], g)
	}
	return idx
}

// permits reports whether a ReferenceGrant in to's namespace lets objects
// of fromGroup/fromKind in fromNamespace refer to the object to of
// toGroup/toKind: one entry of its from and one of its to must match (a
// to without name matches every object of its kind).
func (idx grantIndex) permits(fromGroup gwapiv1.Group, fromKind gwapiv1.Kind, fromNamespace string, toGroup gwapiv1.Group, toKind gwapiv1.Kind, to types.NamespacedName) bool {
	for _, g := range idx[to.Namespace] {
		from := false
		for _, f := range g.Spec.From {
			if f.Group == fromGroup && f.Kind == fromKind && string(f.Namespace) == fromNamespace {
				from = true
			}
		}
		if !from {
			continue
		}
		for _, t := range g.Spec.To {
			if t.Group == toGroup && t.Kind == toKind && (t.Name == nil || *t.Name == "" || string(*t.Name) == to.Name) {
				return true
			}
		}
	}
	return false
}
