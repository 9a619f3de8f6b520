package gatewayapi

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// gwRoute is an HTTPRoute or a GRPCRoute as attachment sees it.
type gwRoute struct {
	ref        objects.Ref
	kind       gwapiv1.Kind
	obj        metav1.Object
	parentRefs []gwapiv1.ParentReference
	hostnames  []gwapiv1.Hostname
}

// parentAttachment is what one parentRef of ours gives a route: the
// listeners it attaches to with the hosts it serves through each, or why
// it attaches to none.
type parentAttachment struct {
	ref       gwapiv1.ParentReference
	gateway   *gwGateway
	listeners []*gwListener
	hosts     [][]string
	problems  findings
}

// parents resolves a route's parentRefs naming Gateways of ours, or
// ListenerSets of our Gateways (the others get no status from us), and
// attaches the route to their listeners: a parentRef picks the listeners
// of its sectionName and port (all when unset); of those, the route
// attaches to the ones whose allowedRoutes admit its kind and namespace
// and whose hostname intersects its hostnames. A Gateway's listeners are
// its own: those of its ListenerSets are reached through the ListenerSet
// only (GEP-1713; the conformance test
// ListenerSetGatewayParentSectionNameNotFound).
func (g *gatewayStage) parents(rt *gwRoute) []*parentAttachment {
	var out []*parentAttachment
	for _, pr := range rt.parentRefs {
		if orDefault(pr.Group, gatewayGroup) != gatewayGroup {
			continue
		}
		ns := orDefault(pr.Namespace, gwapiv1.Namespace(rt.ref.Namespace))
		key := core.NsName(string(ns), string(pr.Name))
		var gw *gwGateway
		var set *gwListenerSet
		switch orDefault(pr.Kind, kindGateway) {
		case kindGateway:
			gw = g.byName[key]
		case kindListenerSet:
			if set = g.listenerSets[key]; set != nil {
				gw = set.parent
			}
		}
		if gw == nil || slices.ContainsFunc(out, func(p *parentAttachment) bool { return reflect.DeepEqual(p.ref, pr) }) {
			continue
		}
		out = append(out, g.attach(rt, pr, gw, set))
	}
	return out
}

// attach attaches a route to the listeners one parentRef selects: of the
// Gateway gw, or of its ListenerSet set.
func (g *gatewayStage) attach(rt *gwRoute, pr gwapiv1.ParentReference, gw *gwGateway, set *gwListenerSet) *parentAttachment {
	p := &parentAttachment{ref: pr, gateway: gw}
	parent, listeners := fmt.Sprintf("Gateway %s/%s", gw.gw.Namespace, gw.gw.Name), gw.ownListeners()
	if set != nil {
		parent, listeners = set.String(), set.listeners
	}
	switch {
	case !gw.accepted():
		p.problems.add(string(gwapiv1.RouteReasonNoMatchingParent), "Gateway %s/%s is not accepted: %s", gw.gw.Namespace, gw.gw.Name, gw.problems.message())
		return p
	case set != nil && len(set.problems) > 0:
		p.problems.add(string(gwapiv1.RouteReasonNoMatchingParent), "%s is not accepted: %s", set, set.problems.message())
		return p
	}
	candidates := selectedListeners(listeners, pr)
	if len(candidates) == 0 {
		hint := ""
		if set == nil && pr.SectionName != nil && slices.ContainsFunc(gw.listeners[gw.own:], func(l *gwListener) bool { return l.spec.Name == *pr.SectionName }) {
			hint = " (a ListenerSet's listener of that name is reached through a parentRef to its ListenerSet)"
		}
		p.problems.add(string(gwapiv1.RouteReasonNoMatchingParent), "%s has no listener%s%s", parent, sectionAndPort(pr), hint)
		return p
	}
	allowed := g.allowingListeners(candidates, rt)
	if len(allowed) == 0 {
		p.problems.add(string(gwapiv1.RouteReasonNotAllowedByListeners), "no listener%s of %s allows %ss from namespace %s", sectionAndPort(pr), parent, rt.kind, rt.ref.Namespace)
		return p
	}
	routeHosts := lowerHostnames(rt.hostnames)
	for _, l := range allowed {
		if hosts := intersectHostnames(l.hostname, routeHosts); len(hosts) > 0 {
			p.listeners = append(p.listeners, l)
			p.hosts = append(p.hosts, hosts)
			l.attached[rt.ref] = true
		}
	}
	if len(p.listeners) == 0 {
		p.problems.add(string(gwapiv1.RouteReasonNoMatchingListenerHostname), "no hostname of the route matches a listener%s of %s", sectionAndPort(pr), parent)
	}
	return p
}

// selectedListeners are the listeners of ls (a parent's) a parentRef
// selects by its sectionName and port (all when unset).
func selectedListeners(ls []*gwListener, pr gwapiv1.ParentReference) []*gwListener {
	var out []*gwListener
	for _, l := range ls {
		if (pr.SectionName == nil || *pr.SectionName == l.spec.Name) && (pr.Port == nil || *pr.Port == l.spec.Port) {
			out = append(out, l)
		}
	}
	return out
}

// allowingListeners are those of ls whose allowedRoutes admit the route's
// kind and namespace.
func (g *gatewayStage) allowingListeners(ls []*gwListener, rt *gwRoute) []*gwListener {
	var out []*gwListener
	for _, l := range ls {
		if l.allowsKind(rt.kind) && g.namespaceAllowed(l, rt.ref.Namespace) {
			out = append(out, l)
		}
	}
	return out
}

// lowerHostnames are a route's hostnames in lower case.
func lowerHostnames(hs []gwapiv1.Hostname) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = strings.ToLower(string(h))
	}
	return out
}

func sectionAndPort(pr gwapiv1.ParentReference) string {
	s := ""
	if pr.SectionName != nil {
		s += " named " + string(*pr.SectionName)
	}
	if pr.Port != nil {
		s += fmt.Sprintf(" on port %d", *pr.Port)
	}
	return s
}

func (l *gwListener) allowsKind(kind gwapiv1.Kind) bool {
	return slices.ContainsFunc(l.kinds, func(k gwapiv1.RouteGroupKind) bool { return *k.Group == gatewayGroup && k.Kind == kind })
}

// namespaceAllowed applies a listener's allowedRoutes.namespaces to a
// route's namespace. A Namespace the control plane was not given has no
// labels.
func (g *gatewayStage) namespaceAllowed(l *gwListener, namespace string) bool {
	switch l.from {
	case gwapiv1.NamespacesFromAll:
		return true
	case gwapiv1.NamespacesFromSame:
		_, own := l.owner()
		return namespace == own
	case gwapiv1.NamespacesFromSelector:
		return l.selector != nil && l.selector.Matches(labels.Set(g.namespaceLabels[namespace]))
	}
	return false
}

// intersectHostnames are the hosts a route serves through a listener
// (lowercased): its hostnames that the listener's hostname matches, or the
// listener's hostname where a wildcard of the route matches it; no
// hostname on either side matches any ("*" when neither has one).
func intersectHostnames(listener string, route []string) []string {
	switch {
	case listener == "" && len(route) == 0:
		return []string{"*"}
	case listener == "":
		return slices.Compact(slices.Clone(route))
	case len(route) == 0:
		return []string{listener}
	}
	var out []string
	for _, r := range route {
		h := ""
		switch {
		case r == listener || wildcardMatches(listener, r):
			h = r
		case wildcardMatches(r, listener):
			h = listener
		}
		if h != "" && !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	return out
}

// wildcardMatches reports whether pattern, a "*.suffix" wildcard, matches
// host: a name (or a narrower wildcard) with at least one more label
// before the suffix.
func wildcardMatches(pattern, host string) bool {
	suffix, ok := strings.CutPrefix(pattern, "*")
	return ok && strings.HasPrefix(suffix, ".") && len(host) > len(suffix) && strings.HasSuffix(host, suffix)
}

// routeParentStatus renders one parent's conditions: Accepted (the
// attachment's problems, then the route's own, then its rules' when none
// is left valid), ResolvedRefs (the route's references) and, when the
// route is accepted with some rules dropped, PartiallyInvalid (the API's
// "Dropped Rule" approach: the other rules are served).
func (g *gatewayStage) routeParentStatus(p *parentAttachment, b *routeBuild, generation int64) gwapiv1.RouteParentStatus {
	acc := append(slices.Clone(p.problems), b.accepted...)
	partial := len(b.dropped) > 0 && b.valid > 0
	if !partial {
		acc = append(acc, b.dropped...)
	}
	conds := []metav1.Condition{
		goodWhenEmpty(gwapiv1.RouteConditionAccepted, acc, gwapiv1.RouteReasonAccepted, "accepted", generation),
		goodWhenEmpty(gwapiv1.RouteConditionResolvedRefs, b.refs, gwapiv1.RouteReasonResolvedRefs, "references resolved", generation),
	}
	if partial && len(acc) == 0 {
		// The API: the message starts with "Dropped Rule"; never set False.
		conds = append(conds, cond(gwapiv1.RouteConditionPartiallyInvalid, true, b.dropped.reason(), "Dropped Rule(s): "+b.dropped.message(), generation))
	}
	return gwapiv1.RouteParentStatus{ParentRef: p.ref, ControllerName: gwapiv1.GatewayController(g.controller), Conditions: conds}
}
