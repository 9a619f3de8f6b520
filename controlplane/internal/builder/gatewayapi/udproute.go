package gatewayapi

import (
	"cmp"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// buildUDPRoute builds one UDPRoute: the datagrams of the listeners of
// protocol UDP it attaches to go to its backends, each client (source
// address and port) a session to one backend endpoint (placeUDP). UDP
// has no host names: the route serves the host "*".
func (g *gatewayStage) buildUDPRoute(r *gwapiv1.UDPRoute) {
	rt := &gwRoute{
		ref:  objects.Ref{Kind: objects.KindUDPRoute, Namespace: r.Namespace, Name: r.Name},
		kind: kindUDPRoute, obj: r, parentRefs: r.Spec.ParentRefs,
	}
	rules := make([]streamRule, len(r.Spec.Rules))
	for i, rule := range r.Spec.Rules {
		rules[i] = streamRule{name: rule.Name, backendRefs: rule.BackendRefs}
	}
	g.buildRoute(rt, func(b *routeBuild) []gwIRRoute { return b.udpRules(rules) })
}

// udpRules are the IR route of a UDPRoute: its rule's backends as one
// cluster (UDPClusterFor: Envoy's UDP proxy sends a session to one
// cluster, the weights apply to its endpoints' groups). A backend that
// cannot be used cannot keep its share either (the proxy cannot drop a
// share of the sessions), so with one taking traffic, none is used: every
// datagram is dropped (invalidBackendCluster, no cluster has the name)
// rather than its share sent to the others.
func (b *routeBuild) udpRules(rules []streamRule) []gwIRRoute {
	if len(rules) == 0 {
		b.accepted.add(string(gwapiv1.RouteReasonUnsupportedValue), "spec.rules must have a rule: no datagram is proxied")
		return nil
	}
	if len(rules) > 1 {
		b.dropped.add(string(gwapiv1.RouteReasonUnsupportedValue), "spec.rules has %d rules: only the first is served", len(rules))
	}
	b.valid++
	rule := rules[0]
	where := ruleWhere(0, rule.name)
	var bes []*core.Backend
	var weights []uint32
	var total int64
	invalid := false
	for i, br := range rule.backendRefs {
		at := fmt.Sprintf("%s.backendRefs[%d]", where, i)
		w := int64(1)
		if br.Weight != nil {
			w = int64(*br.Weight)
		}
		if w < 0 {
			b.dropped.add(string(gwapiv1.RouteReasonUnsupportedValue), "%s: weight %d is negative: it takes no traffic", at, w)
			w = 0
		}
		be := b.udpBackend(br.BackendObjectReference, at) // resolved whatever its weight: its condition says
		switch {
		case w == 0:
		case be == nil:
			invalid = true
		default:
			total += w
			bes, weights = append(bes, be), append(weights, uint32(min(w, int64(^uint32(0)))))
		}
	}
	cluster := invalidBackendCluster
	switch {
	case len(bes) > 1 && slices.ContainsFunc(bes, func(be *core.Backend) bool { return be.Service.Spec.Type == corev1.ServiceTypeExternalName }):
		// Its endpoints are a name Envoy resolves, not endpoints to group
		// with the others': its share would go to them.
		b.refs.add(string(gwapiv1.RouteReasonUnsupportedValue), "%s: an ExternalName Service cannot be weighted with other backends for UDP (one cluster of their endpoints): every datagram is dropped", where)
	case invalid && len(bes) > 0:
		b.refs.add(b.refs.reason(), "%s: a backend that takes traffic cannot be used, and the UDP proxy cannot drop its share alone: every datagram is dropped", where)
	case total > int64(^uint32(0)):
		b.dropped.add(string(gwapiv1.RouteReasonUnsupportedValue), "%s: the backends' weights add up to %d, more than %d: every datagram is dropped", where, total, ^uint32(0))
	case len(bes) > 0:
		c := b.UDPClusterFor(bes, weights)
		b.Out.ClusterUses.Add(c.Name, b.rt.ref)
		cluster = c.Name
	}
	x := &ir.Route{Origins: ir.Origins{b.rt.ref}, Clusters: []ir.WeightedCluster{{Cluster: cluster, Weight: 1}}}
	return []gwIRRoute{{route: x, obj: b.rt.obj, kind: b.rt.kind}}
}

// udpBackend resolves one backendRef of a UDPRoute: a Service's UDP port
// (of the route's namespace, or of another that grants it); nil when it
// cannot be used, with the reason in ResolvedRefs. A Service port a
// BackendTLSPolicy applies to is not used: datagrams cannot be sent over
// TLS, and plaintext is not what the policy asks for.
func (b *routeBuild) udpBackend(ref gwapiv1.BackendObjectReference, where string) *core.Backend {
	group, kind := orDefault(ref.Group, ""), orDefault(ref.Kind, kindService)
	key := core.NsName(string(orDefault(ref.Namespace, gwapiv1.Namespace(b.rt.ref.Namespace))), string(ref.Name))
	if group != "" || kind != kindService {
		b.unusableBackend(where, gwapiv1.RouteReasonInvalidKind, "%s/%s is not a supported backend kind for UDP: use a Service", group, kind)
		return nil
	}
	if !b.referencePermitted(group, kind, key, where) {
		return nil
	}
	if ref.Port == nil {
		b.unusableBackend(where, gwapiv1.RouteReasonBackendNotFound, "Service %s: port is required", key)
		return nil
	}
	be, err := b.R.UDPBackend(key, int(*ref.Port))
	if err != nil {
		b.unusableBackend(where, gwapiv1.RouteReasonBackendNotFound, "%v", err)
		return nil
	}
	if _, aerr := core.ServiceUpstream(be); aerr != nil {
		b.unusableBackend(where, gwapiv1.RouteConditionReason(aerr.Reason), "Service %s: %v: it is not used rather than served otherwise", key, aerr)
		return nil
	}
	if p := b.backendTLS.forPort(key, be.Port.Name); p != nil {
		b.unusableBackend(where, gwapiv1.RouteReasonUnsupportedProtocol, "Service %s port %d: BackendTLSPolicy %s applies to it, and datagrams are not sent over TLS: it is not used rather than sent plaintext", key, *ref.Port, p)
		return nil
	}
	return be
}

// placeUDP gives each ready UDP listener with a route attached an Envoy
// UDP listener of its own (udp-<port>, on the shared HTTP listener's
// address), beside any TCP listener of that port. A UDP listener serves
// one route, as a TCP listener does: the oldest attached; the others stay
// attached and Accepted (the API counts them, and wants them so), with a
// message that says which route serves the listener instead.
func (g *gatewayStage) placeUDP(m *ir.Model) {
	byListener := map[*gwListener][]attachment{}
	var ls []*gwListener
	for _, a := range g.attachments {
		if !a.listener.udp || len(a.routes) == 0 {
			continue
		}
		if byListener[a.listener] == nil {
			ls = append(ls, a.listener)
		}
		byListener[a.listener] = append(byListener[a.listener], a)
	}
	// One ready UDP listener per Envoy port (resolveConflicts).
	slices.SortFunc(ls, func(a, b *gwListener) int { return cmp.Compare(a.envoyPort, b.envoyPort) })
	opts := g.R.Opts()
	for _, l := range ls {
		as := byListener[l]
		slices.SortStableFunc(as, func(a, b attachment) int { return core.OlderClaim(a.routes[0].obj, b.routes[0].obj) })
		winner := as[0]
		for _, a := range as[1:] {
			if a.origin != winner.origin {
				servedByOther(a, "%s %s/%s, older, serves %s (a UDP listener serves one route): this route serves no datagram there",
					winner.origin.Kind, winner.origin.Namespace, winner.origin.Name, l)
			}
		}
		gw := l.gw.ref()
		m.Listeners = append(m.Listeners, &ir.Listener{
			Name: fmt.Sprintf("udp-%d", l.envoyPort), Address: opts.HTTP.Address, Port: l.envoyPort,
			Origins: ir.Origins{gw},
			UDP: &ir.UDPProxy{
				Cluster:     winner.routes[0].route.Clusters[0].Cluster,
				IdleTimeout: opts.UDPIdleTimeout(),
				Origins:     ir.NewOrigins(winner.origin, gw),
			},
		})
	}
}

// servedByOther says in a route's Accepted condition (for the parent it
// is attached through) why it serves nothing there, leaving the condition
// as it is otherwise: the route is accepted, another one is served.
func servedByOther(a attachment, format string, args ...any) {
	if a.parent.st == nil {
		return
	}
	msg := fmt.Sprintf(format, args...)
	parent := &a.parent.st.Parents[a.parent.index]
	for i := range parent.Conditions {
		c := &parent.Conditions[i]
		if c.Type == string(gwapiv1.RouteConditionAccepted) && c.Status == metav1.ConditionTrue {
			c.Message += "; " + msg
		}
	}
}
