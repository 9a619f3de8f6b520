package gatewayapi

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// ListenerSets (GEP-1713) add listeners to a Gateway that allows them
// (spec.allowedListeners). Their listeners are merged into the Gateway's
// list, after its own, in the API's precedence: the Gateway's listeners,
// then the ListenerSets oldest first, then by namespace/name. Merged, they
// share the Gateway's ports (its Service with gateway.servicePerGateway)
// and its conflicts (conflicts.go); a route reaches them only through a
// parentRef to their ListenerSet, never through one to the Gateway
// (attach.go), and a policy's sectionName names a Gateway's own listener
// only (policy.go).

// kindListenerSet names a ListenerSet in a parentRef.
const kindListenerSet = gwapiv1.Kind(objects.KindListenerSet)

// maxMergedListeners bounds a Gateway's merged list: the listeners of
// its ListenerSets past it are not accepted (TooManyListeners), so that
// no number of ListenerSets makes one Gateway unbounded (each ListenerSet
// has at most 64 listeners, their number has no limit).
const maxMergedListeners = 1024

// gwListenerSet is a ListenerSet whose parent is one of our Gateways.
type gwListenerSet struct {
	ls     *gwapiv1.ListenerSet
	st     *status.Object
	parent *gwGateway
	// rank is its place in its parent's precedence (the Gateway's own
	// listeners are 0; its first ListenerSet 1).
	rank int
	// problems make it not accepted (not allowed by its parent, its
	// parent not accepted, its own fields); listeners are its listeners
	// when its parent allows it.
	problems  findings
	listeners []*gwListener
}

func (s *gwListenerSet) ref() objects.Ref {
	return objects.Ref{Kind: objects.KindListenerSet, Namespace: s.ls.Namespace, Name: s.ls.Name}
}

func (s *gwListenerSet) String() string {
	return fmt.Sprintf("ListenerSet %s/%s", s.ls.Namespace, s.ls.Name)
}

// accepted: allowed, with a parent accepted and a listener served.
func (s *gwListenerSet) accepted() bool {
	return len(s.problems) == 0 && slices.ContainsFunc(s.listeners, (*gwListener).ready)
}

// listenerSetParent is the Gateway a ListenerSet's parentRef names; false
// when it names another kind.
func listenerSetParent(ls *gwapiv1.ListenerSet) (types.NamespacedName, bool) {
	p := ls.Spec.ParentRef
	if orDefault(p.Group, gatewayGroup) != gatewayGroup || orDefault(p.Kind, kindGateway) != kindGateway {
		return types.NamespacedName{}, false
	}
	return core.NsName(string(orDefault(p.Namespace, gwapiv1.Namespace(ls.Namespace))), string(p.Name)), true
}

// indexListenerSets files the ListenerSets by the Gateway of ours they
// name, each Gateway's in its precedence (oldest first, then
// namespace/name); the others are not ours and get no status.
func (g *gatewayStage) indexListenerSets(sets []*gwapiv1.ListenerSet, gws []*gwapiv1.Gateway) {
	if len(sets) == 0 {
		return
	}
	ours := map[types.NamespacedName]bool{}
	for _, gw := range gws {
		if _, ok := g.classes[string(gw.Spec.GatewayClassName)]; ok {
			ours[core.NsName(gw.Namespace, gw.Name)] = true
		}
	}
	g.setsByParent = map[types.NamespacedName][]*gwapiv1.ListenerSet{}
	for _, ls := range sets {
		if parent, ok := listenerSetParent(ls); ok && ours[parent] {
			g.setsByParent[parent] = append(g.setsByParent[parent], ls)
		}
	}
	for _, ls := range g.setsByParent {
		slices.SortStableFunc(ls, func(a, b *gwapiv1.ListenerSet) int { return core.OlderClaim(a, b) })
	}
}

// allowedListeners reads a Gateway's spec.allowedListeners: whether it
// admits ListenerSets of namespace (None by default).
type allowedListeners struct {
	from     gwapiv1.FromNamespaces
	selector labels.Selector
}

// readAllowedListeners reads spec.allowedListeners; an invalid one is a
// problem of the Gateway's (it admits no ListenerSet).
func readAllowedListeners(x *gwGateway) allowedListeners {
	al := x.gw.Spec.AllowedListeners
	if al == nil || al.Namespaces == nil {
		return allowedListeners{from: gwapiv1.NamespacesFromNone}
	}
	out := allowedListeners{from: orDefault(al.Namespaces.From, gwapiv1.NamespacesFromNone)}
	switch out.from {
	case gwapiv1.NamespacesFromSame, gwapiv1.NamespacesFromAll, gwapiv1.NamespacesFromNone:
	case gwapiv1.NamespacesFromSelector:
		sel, err := metav1.LabelSelectorAsSelector(al.Namespaces.Selector)
		switch {
		case al.Namespaces.Selector == nil:
			x.problems.add(string(gwapiv1.ListenerReasonUnsupportedValue), "spec.allowedListeners.namespaces.selector is required with from: Selector")
		case err != nil:
			x.problems.add(string(gwapiv1.ListenerReasonUnsupportedValue), "spec.allowedListeners.namespaces.selector: %v", err)
		default:
			out.selector = sel
		}
	default:
		x.problems.add(string(gwapiv1.ListenerReasonUnsupportedValue), "spec.allowedListeners.namespaces.from %q is not one of All, Same, Selector, None", out.from)
	}
	return out
}

// allows reports whether ListenerSets of namespace may attach to the
// Gateway of namespace gwNamespace. A Namespace the control plane was not
// given has no labels.
func (a allowedListeners) allows(gwNamespace, namespace string, nsLabels map[string]map[string]string) bool {
	switch a.from {
	case gwapiv1.NamespacesFromAll:
		return true
	case gwapiv1.NamespacesFromSame:
		return namespace == gwNamespace
	case gwapiv1.NamespacesFromSelector:
		return a.selector != nil && a.selector.Matches(labels.Set(nsLabels[namespace]))
	}
	return false
}

// buildListenerSets checks the ListenerSets that name x: those it allows
// have their listeners merged into its list, after its own, in
// precedence; the others are not accepted (NotAllowed) and serve nothing.
func (g *gatewayStage) buildListenerSets(x *gwGateway, allowed allowedListeners) {
	sets := g.setsByParent[core.NsName(x.gw.Namespace, x.gw.Name)]
	for i, ls := range sets {
		st, complaints := g.gatewayAPIStatus(objects.KindListenerSet, ls.Namespace, ls.Name, ls.Generation)
		s := &gwListenerSet{ls: ls, st: st, parent: x, rank: i + 1, problems: decodeFindings(complaints)}
		g.listenerSets[core.NsName(ls.Namespace, ls.Name)] = s
		x.sets = append(x.sets, s)
		switch {
		case !x.accepted():
			s.problems.add(string(gwapiv1.ListenerSetReasonParentNotAccepted), "Gateway %s/%s is not accepted: %s", x.gw.Namespace, x.gw.Name, x.problems.message())
			continue
		case !allowed.allows(x.gw.Namespace, ls.Namespace, g.namespaceLabels):
			s.problems.add(string(gwapiv1.ListenerSetReasonNotAllowed), "Gateway %s/%s does not allow ListenerSets of namespace %s (its spec.allowedListeners.namespaces.from is %s)",
				x.gw.Namespace, x.gw.Name, ls.Namespace, allowed.from)
			continue
		}
		if len(ls.Spec.Listeners) == 0 {
			s.problems.add(string(gwapiv1.ListenerSetReasonListenersNotValid), "spec.listeners must list at least one listener")
		}
		names := map[gwapiv1.SectionName]bool{}
		for j, e := range ls.Spec.Listeners {
			l := g.buildListener(x, s, j, gwapiv1.Listener(e)) // the same fields
			switch {
			case names[e.Name]:
				l.accepted.add(string(gwapiv1.ListenerReasonUnsupportedValue), "another listener of the ListenerSet is named %q", e.Name)
			case len(x.listeners) >= maxMergedListeners:
				l.accepted.add(string(gwapiv1.ListenerEntryReasonTooManyListeners), "Gateway %s/%s has %d listeners with those of the ListenerSets before this one, the most it takes", x.gw.Namespace, x.gw.Name, maxMergedListeners)
			}
			names[e.Name] = true
			s.listeners = append(s.listeners, l)
			x.listeners = append(x.listeners, l)
		}
	}
}

// listenerSetPorts are the distinct valid ports of the listeners of the
// ListenerSets a Gateway allows, for its Envoy ports (services.go).
func (g *gatewayStage) listenerSetPorts(gw *gwapiv1.Gateway) []int32 {
	sets := g.setsByParent[core.NsName(gw.Namespace, gw.Name)]
	if len(sets) == 0 {
		return nil
	}
	x := &gwGateway{gw: gw}
	allowed := readAllowedListeners(x)
	var ps []int32
	for _, ls := range sets {
		if !allowed.allows(gw.Namespace, ls.Namespace, g.namespaceLabels) {
			continue
		}
		for _, e := range ls.Spec.Listeners {
			if e.Port >= 1 && e.Port <= 65535 && !slices.Contains(ps, e.Port) {
				ps = append(ps, e.Port)
			}
		}
	}
	return ps
}

// listenerSetStatus renders a ListenerSet's findings: Accepted and
// Programmed (NotAllowed, ParentNotAccepted; ListenersNotValid when none
// of its listeners is served, Accepted True with that reason when some
// are not) and its listeners' conditions.
func (g *gatewayStage) listenerSetStatus(s *gwListenerSet) {
	gen := s.ls.Generation
	var notReady findings
	named := map[gwapiv1.SectionName]bool{}
	for _, l := range s.listeners {
		ls, ok := g.listenerStatus(l, gen, true, named)
		if !l.ready() {
			notReady.add(string(gwapiv1.ListenerSetReasonListenersNotValid), "listener %q: %s", l.spec.Name, l.notReadyWhy().message())
		}
		if ok {
			s.st.GatewayAPI.Listeners = append(s.st.GatewayAPI.Listeners, ls)
		}
	}
	var accepted metav1.Condition
	switch {
	case len(s.problems) > 0:
		accepted = cond(gwapiv1.ListenerSetConditionAccepted, false, s.problems.reason(), s.problems.message(), gen)
	case len(notReady) == len(s.listeners):
		accepted = cond(gwapiv1.ListenerSetConditionAccepted, false, gwapiv1.ListenerSetReasonListenersNotValid, "no listener can be served: "+notReady.message(), gen)
	case len(notReady) > 0:
		accepted = cond(gwapiv1.ListenerSetConditionAccepted, true, gwapiv1.ListenerSetReasonListenersNotValid, "some listeners cannot be served: "+notReady.message(), gen)
	default:
		accepted = cond(gwapiv1.ListenerSetConditionAccepted, true, gwapiv1.ListenerSetReasonAccepted, "accepted", gen)
	}
	programmed := cond(gwapiv1.ListenerSetConditionProgrammed, true, gwapiv1.ListenerSetReasonProgrammed, "programmed", gen)
	if accepted.Status != metav1.ConditionTrue {
		programmed = cond(gwapiv1.ListenerSetConditionProgrammed, false, accepted.Reason, accepted.Message, gen)
	}
	s.st.GatewayAPI.Conditions = []metav1.Condition{accepted, programmed}
}

// attachedListenerSets is a Gateway's status.attachedListenerSets: how
// many of the ListenerSets it allows are accepted; nil for a Gateway that
// allows none (the field is left out).
func attachedListenerSets(x *gwGateway) *int32 {
	al := x.gw.Spec.AllowedListeners
	if (al == nil || al.Namespaces == nil || orDefault(al.Namespaces.From, gwapiv1.NamespacesFromNone) == gwapiv1.NamespacesFromNone) && len(x.sets) == 0 {
		return nil
	}
	n := int32(0)
	for _, s := range x.sets {
		if s.accepted() {
			n++
		}
	}
	return &n
}
