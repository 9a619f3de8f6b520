package status

import (
	"cmp"
	"fmt"
	"reflect"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// GatewayAPI is what the builder found about one Gateway API object
// (Object.GatewayAPI): the parts of its status this controller owns, in
// the API's own shapes, with the conditions' observedGeneration set and
// their lastTransitionTime left zero: the renderers below add the times
// by KeepTimes, as ValidCondition does for HTTPProxies.
// Which fields are set depends on the kind.
type GatewayAPI struct {
	// Conditions of a GatewayClass or a Gateway.
	Conditions []metav1.Condition
	// SupportedFeatures of a GatewayClass.
	SupportedFeatures []gwapiv1.SupportedFeature
	// Listeners of a Gateway or a ListenerSet, in spec order.
	Listeners []gwapiv1.ListenerStatus
	// AttachedListenerSets of a Gateway: how many ListenerSets it
	// allows are accepted (nil: it allows none).
	AttachedListenerSets *int32
	// Addresses of a Gateway: where clients reach Envoy.
	Addresses []gwapiv1.GatewayStatusAddress
	// Parents of an HTTPRoute or GRPCRoute: one per parentRef naming a
	// Gateway of ours (the others' controllers write theirs).
	Parents []gwapiv1.RouteParentStatus
	// Ancestors of an ExtAuthPolicy or ExtProcPolicy: one per distinct
	// targetRef, with its Accepted condition.
	Ancestors []gwapiv1.PolicyAncestorStatus
}

// same reports whether two findings give the same status. Gateway API
// objects are few next to HTTPProxies: reflection is affordable here.
func (g *GatewayAPI) same(h *GatewayAPI) bool {
	return g == h || g != nil && h != nil && reflect.DeepEqual(g, h)
}

// envoyRejected is Envoy's rejection of the configuration made from o
// (errors added after the build, Object.WithErrors), as one condition
// message; "" when Envoy accepted it.
func envoyRejected(o *Object) string {
	var msgs []string
	for _, p := range o.Errors {
		if p.Type == TypeEnvoyRejected {
			msgs = append(msgs, p.Message)
		}
	}
	return strings.Join(msgs, "; ")
}

// withExtensionError adds an ExtensionError condition (True) when an
// extension hook failed on what o made (problems added after the build:
// errors under failurePolicy Closed, warnings under Open), saying which;
// cs unchanged otherwise. Without a failure there is no such condition, so
// a recovered extension's is removed. cs is never modified.
func withExtensionError(cs []metav1.Condition, o *Object, generation int64) []metav1.Condition {
	var msgs []string
	for _, l := range [][]Problem{o.Errors, o.Warnings} {
		for _, p := range l {
			if p.Type == TypeExtensionError {
				msgs = append(msgs, p.Message)
			}
		}
	}
	if len(msgs) == 0 {
		return cs
	}
	return append(append([]metav1.Condition(nil), cs...), metav1.Condition{
		Type: TypeExtensionError, Status: metav1.ConditionTrue, Reason: ReasonExtensionHookFailed,
		Message: strings.Join(msgs, "; "), ObservedGeneration: generation,
	})
}

// generationOf is the observedGeneration of cs (all the same).
func generationOf(cs []metav1.Condition) int64 {
	if len(cs) == 0 {
		return 0
	}
	return cs[0].ObservedGeneration
}

// GatewayClass computes a GatewayClass's status.
func GatewayClass(o *Object, prev gwapiv1.GatewayClassStatus, now metav1.Time) gwapiv1.GatewayClassStatus {
	g := o.gatewayAPI()
	return gwapiv1.GatewayClassStatus{Conditions: KeepTimes(prev.Conditions, g.Conditions, now), SupportedFeatures: g.SupportedFeatures}
}

// Gateway computes a Gateway's status: its conditions and its listeners'.
// A rejection by Envoy makes it (and its listeners) not Programmed.
func Gateway(o *Object, prev gwapiv1.GatewayStatus, now metav1.Time) gwapiv1.GatewayStatus {
	g := o.gatewayAPI()
	rejected := envoyRejected(o)
	conds := withExtensionError(programmedUnless(g.Conditions, rejected), o, generationOf(g.Conditions))
	out := gwapiv1.GatewayStatus{Conditions: KeepTimes(prev.Conditions, conds, now), Addresses: g.Addresses, AttachedListenerSets: g.AttachedListenerSets}
	for _, l := range g.Listeners {
		var prevConds []metav1.Condition
		for _, p := range prev.Listeners {
			if p.Name == l.Name {
				prevConds = p.Conditions
			}
		}
		l.Conditions = KeepTimes(prevConds, programmedUnless(l.Conditions, rejected), now)
		out.Listeners = append(out.Listeners, l)
	}
	return out
}

// ListenerSet computes a ListenerSet's status: its conditions and its
// listeners', as a Gateway's (a rejection by Envoy makes them not
// Programmed).
func ListenerSet(o *Object, prev gwapiv1.ListenerSetStatus, now metav1.Time) gwapiv1.ListenerSetStatus {
	g := o.gatewayAPI()
	rejected := envoyRejected(o)
	conds := withExtensionError(programmedUnless(g.Conditions, rejected), o, generationOf(g.Conditions))
	out := gwapiv1.ListenerSetStatus{Conditions: KeepTimes(prev.Conditions, conds, now)}
	for _, l := range g.Listeners {
		var prevConds []metav1.Condition
		for _, p := range prev.Listeners {
			if p.Name == l.Name {
				prevConds = p.Conditions
			}
		}
		out.Listeners = append(out.Listeners, gwapiv1.ListenerEntryStatus{
			Name: l.Name, SupportedKinds: l.SupportedKinds, AttachedRoutes: l.AttachedRoutes,
			Conditions: KeepTimes(prevConds, programmedUnless(l.Conditions, rejected), now),
		})
	}
	return out
}

// programmedUnless turns a Programmed condition False when Envoy rejected
// the configuration (rejected is its message).
func programmedUnless(cs []metav1.Condition, rejected string) []metav1.Condition {
	return falseIfRejected(cs, string(gwapiv1.GatewayConditionProgrammed), string(gwapiv1.GatewayReasonInvalid), rejected)
}

// falseIfRejected turns the True condition of type typ False, with reason,
// when Envoy rejected the configuration (rejected is its message). A
// condition already False keeps its own reason. cs is never modified.
func falseIfRejected(cs []metav1.Condition, typ, reason, rejected string) []metav1.Condition {
	if rejected == "" {
		return cs
	}
	out := append([]metav1.Condition(nil), cs...)
	for i := range out {
		if out[i].Type == typ && out[i].Status == metav1.ConditionTrue {
			out[i].Status, out[i].Reason, out[i].Message = metav1.ConditionFalse, reason, rejected
		}
	}
	return out
}

// Route computes the status of an HTTPRoute or GRPCRoute: one entry per
// parent of ours. A rejection by Envoy is said in each parent's Accepted
// condition.
func Route(o *Object, prev gwapiv1.RouteStatus, now metav1.Time) gwapiv1.RouteStatus {
	g := o.gatewayAPI()
	rejected := envoyRejected(o)
	out := gwapiv1.RouteStatus{Parents: []gwapiv1.RouteParentStatus{}}
	for _, p := range g.Parents {
		var prevConds []metav1.Condition
		for _, q := range prev.Parents {
			if q.ControllerName == p.ControllerName && reflect.DeepEqual(q.ParentRef, p.ParentRef) {
				prevConds = q.Conditions
			}
		}
		conds := falseIfRejected(p.Conditions, string(gwapiv1.RouteConditionAccepted), ReasonRejectedByEnvoy, rejected)
		conds = withExtensionError(conds, o, generationOf(p.Conditions))
		p.Conditions = KeepTimes(prevConds, conds, now)
		out.Parents = append(out.Parents, p)
	}
	return out
}

// Policy computes the status of an ExtAuthPolicy or ExtProcPolicy: one
// ancestor per target. A rejection by Envoy of what the policy made is
// said in each ancestor's Accepted condition, as for routes.
func Policy(o *Object, prev gwapiv1.PolicyStatus, now metav1.Time) gwapiv1.PolicyStatus {
	g := o.gatewayAPI()
	rejected := envoyRejected(o)
	out := gwapiv1.PolicyStatus{Ancestors: []gwapiv1.PolicyAncestorStatus{}}
	for _, a := range g.Ancestors {
		var prevConds []metav1.Condition
		for _, q := range prev.Ancestors {
			if q.ControllerName == a.ControllerName && reflect.DeepEqual(q.AncestorRef, a.AncestorRef) {
				prevConds = q.Conditions
			}
		}
		conds := falseIfRejected(a.Conditions, string(gwapiv1.PolicyConditionAccepted), ReasonRejectedByEnvoy, rejected)
		a.Conditions = KeepTimes(prevConds, conds, now)
		out.Ancestors = append(out.Ancestors, a)
	}
	return out
}

func (o *Object) gatewayAPI() *GatewayAPI {
	if o.GatewayAPI == nil {
		return &GatewayAPI{}
	}
	return o.GatewayAPI
}

// notServedConditions are the conditions that say a Gateway API object, or
// a part of it, is not served as written, with the status that says so.
var notServedConditions = map[string]metav1.ConditionStatus{
	"Accepted":         metav1.ConditionFalse,
	"Programmed":       metav1.ConditionFalse,
	"ResolvedRefs":     metav1.ConditionFalse,
	"Conflicted":       metav1.ConditionTrue,
	"PartiallyInvalid": metav1.ConditionTrue,
}

// Problem is the first condition of g that says the object, one of its
// listeners, one of its parents or ancestors is not served as written
// (translate --strict fails on it), with where it is; "" for none.
func (g *GatewayAPI) Problem() string {
	if g == nil {
		return ""
	}
	first := func(where string, cs []metav1.Condition) string {
		for _, c := range cs {
			if s, ok := notServedConditions[c.Type]; ok && c.Status == s {
				return fmt.Sprintf("%s%s %s (%s): %s", where, c.Type, c.Status, c.Reason, c.Message)
			}
		}
		return ""
	}
	p := first("", g.Conditions)
	for _, l := range g.Listeners {
		p = cmp.Or(p, first(fmt.Sprintf("listener %s: ", l.Name), l.Conditions))
	}
	for _, r := range g.Parents {
		p = cmp.Or(p, first(fmt.Sprintf("parent %s: ", r.ParentRef.Name), r.Conditions))
	}
	for _, a := range g.Ancestors {
		p = cmp.Or(p, first(fmt.Sprintf("ancestor %s: ", a.AncestorRef.Name), a.Conditions))
	}
	return p
}
