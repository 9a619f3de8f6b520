package core

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Policies attach to their targets with spec.targetRefs: the Gateway
// API's (Gateways, listeners, routes, rules) and HTTPProxies (the
// extensions' policies). A PolicyIndex says, for the policies of one kind,
// which one wins on each target (the oldest there) and which lost where
// (Conflicted), once per build, so that both front doors decide conflicts
// the same way. T is what a front door's policies target.

// PolicyCandidate is what the index needs of a policy: its object (for
// its age) and its targets.
type PolicyCandidate[T comparable] struct {
	Obj     metav1.Object
	Targets []T
	// Override: the policy's settings are overrides (GEP-713): on a
	// route, they win over every more specific target's policy.
	Override bool
}

// PolicyIndex says which policy of one kind wins on each target, and
// which lost where. Policies are indexes into the slice it was built
// from.
type PolicyIndex[T comparable] struct {
	winner map[T]int
	// lost holds the targets where a policy is Conflicted, with the
	// winner there.
	lost map[int]map[T]int
	// override holds the policies whose settings are overrides.
	override map[int]bool
}

// NewPolicyIndex decides every target's winner once: of the policies on
// a target, the oldest (creationTimestamp, then namespace and name, as
// for host names).
func NewPolicyIndex[T comparable](ps []PolicyCandidate[T]) PolicyIndex[T] {
	x := PolicyIndex[T]{winner: map[T]int{}, lost: map[int]map[T]int{}, override: map[int]bool{}}
	order := make([]int, len(ps))
	for i := range order {
		order[i] = i
		if ps[i].Override {
			x.override[i] = true
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return OlderClaim(ps[a].Obj, ps[b].Obj) })
	for _, i := range order {
		for _, t := range ps[i].Targets {
			w, taken := x.winner[t]
			switch {
			case !taken:
				x.winner[t] = i
			case w != i:
				if x.lost[i] == nil {
					x.lost[i] = map[T]int{}
				}
				x.lost[i][t] = w
			}
		}
	}
	return x
}

// Winner is the policy that wins on t; false for none.
func (x PolicyIndex[T]) Winner(t T) (int, bool) {
	i, ok := x.winner[t]
	return i, ok
}

// OverriddenAt is a policy that wins on a target of a route but is
// overridden there by the overrides of a less specific target's.
type OverriddenAt[T comparable] struct {
	Policy int
	Target T
}

// Resolve is the policy that applies to a route reached by targets (the
// most specific first), as GEP-713 has it: the overrides of its least
// specific target that has a winner with overrides, else the winner of
// its most specific target that has one (defaults); false for none.
// overridden are the winners of the more specific targets that the
// overrides replaced there. Levels are not merged: the winner applies
// alone.
func (x PolicyIndex[T]) Resolve(targets []T) (applied int, overridden []OverriddenAt[T], ok bool) {
	for j := len(targets) - 1; j >= 0; j-- {
		i, won := x.winner[targets[j]]
		if !won || !x.override[i] {
			continue
		}
		for _, t := range targets[:j] {
			if w, won := x.winner[t]; won && w != i {
				overridden = append(overridden, OverriddenAt[T]{w, t})
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

// LostTo is the policy that wins on t instead of policy i; false when i
// is not Conflicted there.
func (x PolicyIndex[T]) LostTo(i int, t T) (int, bool) {
	w, ok := x.lost[i][t]
	return w, ok
}
