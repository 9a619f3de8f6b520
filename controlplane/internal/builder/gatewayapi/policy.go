package gatewayapi

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
//   - gateway_policy.go: the index (targets, precedence, conflicts);
//   - gateway_policy_resolve.go: each policy's own checks and what it
//     does (its server, or the opt-out);
//   - gateway_policy_apply.go: the winners onto the IR routes and hosts;
//   - gateway_policy_status.go: status.ancestors.

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
// an unnamed rule cannot be targeted.
func (at routeAt) targets() []policyTarget {
	out := make([]policyTarget, 0, 4)
	if at.rule != "" {
		out = append(out, policyTarget{at.routeKind, at.namespace, at.route, at.rule})
	}
	return append(out,
		policyTarget{at.routeKind, at.namespace, at.route, ""},
		policyTarget{kindGateway, at.gwNamespace, at.gwName, at.listener},
		policyTarget{kindGateway, at.gwNamespace, at.gwName, ""},
	)
}

// policyCandidate is what the index needs of a policy of either kind: its
// object (for its age) and its targets.
type policyCandidate struct {
	obj     metav1.Object
	targets []policyTarget
	// override: the policy's settings are overrides (GEP-713): on a
	// route, they win over every more specific target's policy.
	override bool
}

// policyIndex says which policy of one kind wins on each target, and
// which lost where (Conflicted). Policies are indexes into the slice it
// was built from.
type policyIndex struct {
	winner map[policyTarget]int
	// lost holds the targets where a policy is Conflicted, with the
	// winner there.
	lost map[int]map[policyTarget]int
	// override holds the policies whose settings are overrides.
	override map[int]bool
}

// newPolicyIndex decides every target's winner once: of the policies on
// a target, the oldest (creationTimestamp, then namespace and name, as
// for host names).
func newPolicyIndex(ps []policyCandidate) policyIndex {
	x := policyIndex{winner: map[policyTarget]int{}, lost: map[int]map[policyTarget]int{}, override: map[int]bool{}}
	order := make([]int, len(ps))
	for i := range order {
		order[i] = i
		if ps[i].override {
			x.override[i] = true
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return core.OlderClaim(ps[a].obj, ps[b].obj) })
	for _, i := range order {
		for _, t := range ps[i].targets {
			w, taken := x.winner[t]
			switch {
			case !taken:
				x.winner[t] = i
			case w != i:
				if x.lost[i] == nil {
					x.lost[i] = map[policyTarget]int{}
				}
				x.lost[i][t] = w
			}
		}
	}
	return x
}

// forRoute is the policy that applies to a route at at; false for none.
// Levels are not merged: the winner applies alone.
func (x policyIndex) forRoute(at routeAt) (int, bool) {
	i, _, ok := x.resolve(at)
	return i, ok
}

// overriddenAt is a policy that wins on a target of a route but is
// overridden there by the overrides of a less specific target's.
type overriddenAt struct {
	policy int
	target policyTarget
}

// resolve is the policy that applies to a route at at, as GEP-713 has
// it: the overrides of its least specific target that has a winner with
// overrides, else the winner of its most specific target that has one
// (defaults); false for none. overridden are the winners of the more
// specific targets that the overrides replaced there.
func (x policyIndex) resolve(at routeAt) (applied int, overridden []overriddenAt, ok bool) {
	targets := at.targets()
	for j := len(targets) - 1; j >= 0; j-- {
		i, won := x.winner[targets[j]]
		if !won || !x.override[i] {
			continue
		}
		for _, t := range targets[:j] {
			if w, won := x.winner[t]; won && w != i {
				overridden = append(overridden, overriddenAt{w, t})
			}
		}
		return i, overridden, true
	}
	for _, t := range targets {
		if i, won := x.winner[t]; won {
			return i, nil, true
		}
	}
	return 0, nil, false
}

// lostTo is the policy that wins on t instead of policy i; false when i
// is not Conflicted there.
func (x policyIndex) lostTo(i int, t policyTarget) (int, bool) {
	w, ok := x.lost[i][t]
	return w, ok
}
