package gatewayapi

import (
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
)

// The policies of the Gateway API front door (ExtAuthPolicy,
// ExtProcPolicy; docs/gateway-api-policies.md) attach to a Gateway, one of
// its listeners, a route or one of its rules. Which one applies to a
// generated route is answered by a policyIndex, built once per kind and
// build: the most specific attachment wins (rule, route, listener,
// Gateway), and of two policies on the same target the older one. One
// file per concern:
//
//   - policy.go: the targets and their precedence (the index itself,
//     winners and conflicts, is core/policyindex.go, shared with the
//     HTTPProxy front door);
//   - policy_resolve.go: each policy's own checks and what it does (its
//     server, or the opt-out);
//   - policy_apply.go: the winners onto the IR routes and hosts;
//   - policy_status.go: status.ancestors.

// policyTarget is one object (or section) a policy may attach to. Targets
// are local references: the namespace is the policy's.
type policyTarget struct {
	kind      gwapiv1.Kind
	namespace string
	name      string
	// section is a Gateway's listener or a route's rule (by name); ""
	// for the whole object.
	section string
}

// routeAt is where a generated route is: its listener (of its Gateway),
// its route and its rule. What a policy may target of it.
type routeAt struct {
	gwNamespace, gwName, listener string
	routeKind                     gwapiv1.Kind
	namespace, route, rule        string
}

// targets are the targets that reach a route, the most specific first;
// an unnamed rule cannot be targeted, nor a listener of a ListenerSet
// (listener ""): a Gateway's sectionName names its own listeners only.
func (at routeAt) targets() []policyTarget {
	out := make([]policyTarget, 0, 4)
	if at.rule != "" {
		out = append(out, policyTarget{at.routeKind, at.namespace, at.route, at.rule})
	}
	if at.routeKind != "" {
		out = append(out, policyTarget{at.routeKind, at.namespace, at.route, ""})
	}
	if at.listener != "" {
		out = append(out, policyTarget{kindGateway, at.gwNamespace, at.gwName, at.listener})
	}
	return append(out, policyTarget{kindGateway, at.gwNamespace, at.gwName, ""})
}

// policyListener is the section of its Gateway a policy may name for a
// listener: its name, or none for a ListenerSet's (a policy on the whole
// Gateway reaches it, one on a Gateway listener of the same name does not:
// docs/gateway-api.md, "ListenerSets").
func policyListener(l *gwListener) string {
	if l.set != nil {
		return ""
	}
	return string(l.spec.Name)
}

// policyCandidate and policyIndex are the core's (shared with the
// HTTPProxy front door's extension policies), over the Gateway API's
// targets.
type (
	policyCandidate = core.PolicyCandidate[policyTarget]
	policyIndex     = core.PolicyIndex[policyTarget]
)

func newPolicyIndex(ps []policyCandidate) policyIndex { return core.NewPolicyIndex(ps) }
