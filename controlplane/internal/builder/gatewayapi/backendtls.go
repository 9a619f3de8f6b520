package gatewayapi

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
)

// backendTLSIndex holds the BackendTLSPolicies by the Service they target.
// Portcullis does not implement BackendTLSPolicy: a backend whose Service
// port one targets cannot be spoken to as its owner asked (TLS, with that
// validation), and it must not get plaintext instead. It is invalid: it
// answers 500 for its share (docs/gateway-api.md).
type backendTLSIndex map[types.NamespacedName][]backendTLSTarget

// backendTLSTarget is one targetRef of a policy to a Service.
type backendTLSTarget struct {
	policy string // namespace/name
	// port is the sectionName: a port's name; "" for every port.
	port string
}

func newBackendTLSIndex(policies []*gwapiv1.BackendTLSPolicy) backendTLSIndex {
	idx := backendTLSIndex{}
	for _, p := range policies {
		for _, t := range p.Spec.TargetRefs {
			// A policy applies to objects of its own namespace. The
			// other kinds it may target (implementation-specific) are
			// not backends Portcullis would speak plaintext to on its
			// behalf: an ExtensionService has its own TLS fields.
			if t.Group != "" || t.Kind != kindService {
				continue
			}
			key := core.NsName(p.Namespace, string(t.Name))
			idx[key] = append(idx[key], backendTLSTarget{policy: p.Namespace + "/" + p.Name, port: string(core.PtrValue(t.SectionName))})
		}
	}
	return idx
}

// targeting names the policies that target the Service svc as a whole or
// its port named port, sorted; "" for none.
func (idx backendTLSIndex) targeting(svc types.NamespacedName, port string) string {
	var names []string
	for _, t := range idx[svc] {
		if t.port == "" || t.port == port {
			names = append(names, t.policy)
		}
	}
	slices.Sort(names)
	return strings.Join(slices.Compact(names), ", ")
}
