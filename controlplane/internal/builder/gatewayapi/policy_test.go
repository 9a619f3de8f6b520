package gatewayapi

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// The route every case looks up: rule "health" of HTTPRoute shop (in
// namespace apps), attached through listener "http" of Gateway infra/web.
var shopHealth = routeAt{
	gwNamespace: "infra", gwName: "web", listener: "http",
	routeKind: kindHTTPRoute, namespace: "apps", route: "shop", rule: "health",
}

var (
	onGateway  = policyTarget{kind: kindGateway, namespace: "infra", name: "web"}
	onListener = policyTarget{kind: kindGateway, namespace: "infra", name: "web", section: "http"}
	onRoute    = policyTarget{kind: kindHTTPRoute, namespace: "apps", name: "shop"}
	onRule     = policyTarget{kind: kindHTTPRoute, namespace: "apps", name: "shop", section: "health"}
)

// candidate is a policy named name, created at minute created (0: no
// creation time), on targets.
func candidate(name string, created int, targets ...policyTarget) policyCandidate {
	m := &metav1.ObjectMeta{Namespace: "apps", Name: name}
	if created > 0 {
		m.CreationTimestamp = metav1.NewTime(time.Date(2025, 1, 1, 0, created, 0, 0, time.UTC))
	}
	return policyCandidate{Obj: m, Targets: targets}
}

func TestPolicyIndexForRoute(t *testing.T) {
	for _, tc := range []struct {
		name     string
		policies []policyCandidate
		at       routeAt
		want     string // the winner's name; "" for none
	}{
		{"no policy", nil, shopHealth, ""},
		{"the Gateway's", []policyCandidate{candidate("gw", 1, onGateway)}, shopHealth, "gw"},
		{"the listener over the Gateway", []policyCandidate{candidate("gw", 1, onGateway), candidate("l", 2, onListener)}, shopHealth, "l"},
		{"the route over the listener", []policyCandidate{candidate("l", 1, onListener), candidate("r", 2, onRoute)}, shopHealth, "r"},
		{"the rule over the route", []policyCandidate{candidate("r", 1, onRoute), candidate("rule", 2, onRule)}, shopHealth, "rule"},
		{"the rule over every level, in any order", []policyCandidate{
			candidate("rule", 4, onRule), candidate("r", 3, onRoute), candidate("l", 2, onListener), candidate("gw", 1, onGateway),
		}, shopHealth, "rule"},
		{"a policy on several levels: its most specific", []policyCandidate{candidate("both", 1, onGateway, onRule)}, shopHealth, "both"},
		{"another rule of the route: the route's", []policyCandidate{candidate("r", 1, onRoute), candidate("rule", 2, onRule)},
			routeAt{gwNamespace: "infra", gwName: "web", listener: "http", routeKind: kindHTTPRoute, namespace: "apps", route: "shop", rule: "main"}, "r"},
		{"an unnamed rule gets its route's", []policyCandidate{candidate("r", 1, onRoute), candidate("rule", 2, onRule)},
			routeAt{gwNamespace: "infra", gwName: "web", listener: "http", routeKind: kindHTTPRoute, namespace: "apps", route: "shop"}, "r"},
		{"another listener: the Gateway's", []policyCandidate{candidate("gw", 1, onGateway), candidate("l", 2, onListener)},
			routeAt{gwNamespace: "infra", gwName: "web", listener: "https", routeKind: kindHTTPRoute, namespace: "apps", route: "shop", rule: "health"}, "gw"},
		{"a GRPCRoute of the same name is another target", []policyCandidate{candidate("r", 1, onRoute)},
			routeAt{gwNamespace: "infra", gwName: "web", listener: "http", routeKind: kindGRPCRoute, namespace: "apps", route: "shop", rule: "health"}, ""},
		{"one level: the older wins", []policyCandidate{candidate("young", 5, onRoute), candidate("old", 1, onRoute)}, shopHealth, "old"},
		{"one level, same age: by name", []policyCandidate{candidate("b", 1, onRoute), candidate("a", 1, onRoute)}, shopHealth, "a"},
		{"one level: a creation time beats none", []policyCandidate{candidate("a", 0, onRoute), candidate("b", 1, onRoute)}, shopHealth, "b"},
		{"an older policy at a less specific level loses", []policyCandidate{candidate("old", 1, onGateway), candidate("young", 9, onRoute)}, shopHealth, "young"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := newPolicyIndex(tc.policies)
			got := ""
			if i, _, ok := x.Resolve(tc.at.targets()); ok {
				got = tc.policies[i].Obj.GetName()
			}
			if got != tc.want {
				t.Errorf("forRoute = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestPolicyIndexConflicts(t *testing.T) {
	ps := []policyCandidate{
		candidate("young", 5, onRoute, onGateway),
		candidate("old", 1, onRoute),
		candidate("other", 3, onListener),
	}
	x := newPolicyIndex(ps)
	if w, lost := x.LostTo(0, onRoute); !lost || ps[w].Obj.GetName() != "old" {
		t.Errorf("young on the route: lost %v to %d, want lost to old", lost, w)
	}
	for _, tc := range []struct {
		policy int
		target policyTarget
	}{{0, onGateway}, {1, onRoute}, {2, onListener}} {
		if _, lost := x.LostTo(tc.policy, tc.target); lost {
			t.Errorf("%s is Conflicted on %+v: it is alone there, or the older", ps[tc.policy].Obj.GetName(), tc.target)
		}
	}
}

func TestPolicyTargets(t *testing.T) {
	ref := func(kind gwapiv1.Kind, name, section string) gwapiv1.LocalPolicyTargetReferenceWithSectionName {
		r := gwapiv1.LocalPolicyTargetReferenceWithSectionName{LocalPolicyTargetReference: gwapiv1.LocalPolicyTargetReference{Group: gatewayGroup, Kind: kind, Name: gwapiv1.ObjectName(name)}}
		if section != "" {
			s := gwapiv1.SectionName(section)
			r.SectionName = &s
		}
		return r
	}
	service := ref("Service", "echo", "")
	otherGroup := ref(kindGateway, "web", "")
	otherGroup.Group = "example.com"
	for _, tc := range []struct {
		name    string
		refs    []gwapiv1.LocalPolicyTargetReferenceWithSectionName
		targets int
		invalid int
	}{
		{"every kind", []gwapiv1.LocalPolicyTargetReferenceWithSectionName{ref(kindGateway, "web", ""), ref(kindHTTPRoute, "shop", "health"), ref(kindGRPCRoute, "orders", "")}, 3, 0},
		{"two sections of one object", []gwapiv1.LocalPolicyTargetReferenceWithSectionName{ref(kindGateway, "web", "http"), ref(kindGateway, "web", "https")}, 2, 0},
		{"another kind or group", []gwapiv1.LocalPolicyTargetReferenceWithSectionName{service, otherGroup, ref(kindGateway, "web", "")}, 1, 2},
		{"one target twice", []gwapiv1.LocalPolicyTargetReferenceWithSectionName{ref(kindHTTPRoute, "shop", "a"), ref(kindHTTPRoute, "shop", "a")}, 1, 1},
		{"an object and one of its sections", []gwapiv1.LocalPolicyTargetReferenceWithSectionName{ref(kindHTTPRoute, "shop", ""), ref(kindHTTPRoute, "shop", "a")}, 2, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			targets, invalid := policyTargets("apps", tc.refs, nil)
			if len(targets) != tc.targets || len(invalid) != tc.invalid {
				t.Errorf("policyTargets: %d targets, %d complaints (%s); want %d, %d", len(targets), len(invalid), invalid.message(), tc.targets, tc.invalid)
			}
			for _, x := range targets {
				if x.namespace != "apps" {
					t.Errorf("target %+v is not in the policy's namespace", x)
				}
			}
		})
	}
}

// override is candidate with its settings as overrides (GEP-713).
func override(name string, created int, targets ...policyTarget) policyCandidate {
	c := candidate(name, created, targets...)
	c.Override = true
	return c
}

// TestPolicyIndexOverrides: the overrides of the least specific target
// win over every more specific policy, defaults or overrides, which are
// told (overridden); without overrides the most specific wins as before.
func TestPolicyIndexOverrides(t *testing.T) {
	for _, tc := range []struct {
		name       string
		policies   []policyCandidate
		want       string
		overridden []string // name@level of the policies overridden
	}{
		{"defaults: the rule's opt-out wins", []policyCandidate{candidate("gw", 1, onGateway), candidate("off", 2, onRule)}, "off", nil},
		{"the Gateway's overrides win over the rule's", []policyCandidate{override("gw", 1, onGateway), candidate("off", 2, onRule)}, "gw", []string{"off@rule"}},
		{"over every level", []policyCandidate{
			override("gw", 1, onGateway), candidate("l", 2, onListener), candidate("r", 3, onRoute), candidate("off", 4, onRule),
		}, "gw", []string{"off@rule", "r@route", "l@listener"}},
		{"the less specific of two overrides", []policyCandidate{override("l", 1, onListener), override("r", 2, onRoute), candidate("off", 3, onRule)}, "l", []string{"off@rule", "r@route"}},
		{"overrides on the route win over its rules", []policyCandidate{candidate("gw", 1, onGateway), override("r", 2, onRoute), candidate("off", 3, onRule)}, "r", []string{"off@rule"}},
		{"overrides alone", []policyCandidate{override("gw", 1, onGateway)}, "gw", nil},
		{"an older policy on the Gateway: its conflict loser's overrides do not count", []policyCandidate{candidate("old", 1, onGateway), override("young", 2, onGateway), candidate("off", 3, onRule)}, "off", nil},
		{"a policy on several levels is not overridden by itself", []policyCandidate{override("both", 1, onGateway, onRule)}, "both", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			levels := map[policyTarget]string{onRule: "rule", onRoute: "route", onListener: "listener", onGateway: "gateway"}
			i, overridden, ok := newPolicyIndex(tc.policies).Resolve(shopHealth.targets())
			if !ok || tc.policies[i].Obj.GetName() != tc.want {
				t.Fatalf("resolve = %d (%v), want %q", i, ok, tc.want)
			}
			var got []string
			for _, o := range overridden {
				got = append(got, tc.policies[o.Policy].Obj.GetName()+"@"+levels[o.Target])
			}
			if !slices.Equal(got, tc.overridden) {
				t.Errorf("overridden = %v, want %v", got, tc.overridden)
			}
		})
	}
}

// TestPolicySetRefusedOptOut: an opt-out the configuration file refuses
// (globalExtAuth.optOut: forbidden) wins nowhere: the route gets the next
// policy of its target, or of a less specific one.
func TestPolicySetRefusedOptOut(t *testing.T) {
	policy := func(name string, created int, refused bool, targets ...policyTarget) *gwPolicy {
		c := candidate(name, created, targets...)
		p := &gwPolicy{obj: c.Obj, targets: targets}
		if refused {
			p.refused, p.disabled = "forbidden", true
		}
		return p
	}
	for _, tc := range []struct {
		name     string
		policies []*gwPolicy
		want     string
	}{
		{"a refused opt-out on the rule: the Gateway's", []*gwPolicy{policy("gw", 1, false, onGateway), policy("off", 2, true, onRule)}, "gw"},
		{"an older refused opt-out: the younger on the same target", []*gwPolicy{policy("off", 1, true, onRoute), policy("young", 2, false, onRoute)}, "young"},
		{"a refused opt-out alone: none (the global authorization)", []*gwPolicy{policy("off", 1, true, onRoute)}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if p := newPolicySet(tc.policies).forRoute(shopHealth); p != nil {
				got = p.obj.GetName()
			}
			if got != tc.want {
				t.Errorf("forRoute = %q, want %q", got, tc.want)
			}
		})
	}
}
