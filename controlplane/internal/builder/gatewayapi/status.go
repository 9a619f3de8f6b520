package gatewayapi

import (
	"math"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
)

// gatewayStatus renders a Gateway's findings: its Accepted and Programmed
// conditions and each listener's Accepted, ResolvedRefs, Conflicted and
// Programmed, supported kinds and attached routes. Some listeners not
// ready: Accepted with ListenersNotValid; none ready: not accepted.
func (g *gatewayStage) gatewayStatus(x *gwGateway) {
	gen := x.gw.Generation
	var notReady findings
	named := map[gwapiv1.SectionName]bool{}
	for _, l := range x.ownListeners() {
		ls, ok := g.listenerStatus(l, gen, false, named)
		if !l.ready() {
			notReady.add(string(gwapiv1.GatewayReasonListenersNotValid), "listener %q: %s", l.spec.Name, l.notReadyWhy().message())
		}
		if ok {
			x.st.GatewayAPI.Listeners = append(x.st.GatewayAPI.Listeners, ls)
		}
	}
	x.st.GatewayAPI.AttachedListenerSets = attachedListenerSets(x)
	var accepted metav1.Condition
	switch {
	case !x.accepted():
		accepted = goodWhenEmpty(gwapiv1.GatewayConditionAccepted, x.problems, gwapiv1.GatewayReasonAccepted, "", gen)
	case len(notReady) == x.own:
		accepted = cond(gwapiv1.GatewayConditionAccepted, false, gwapiv1.GatewayReasonListenersNotValid, "no listener can be served: "+notReady.message(), gen)
	case len(notReady) > 0:
		accepted = cond(gwapiv1.GatewayConditionAccepted, true, gwapiv1.GatewayReasonListenersNotValid, "some listeners cannot be served: "+notReady.message(), gen)
	default:
		accepted = cond(gwapiv1.GatewayConditionAccepted, true, gwapiv1.GatewayReasonAccepted, "accepted", gen)
	}
	programmed, addresses := g.programmed(x, accepted)
	x.st.GatewayAPI.Conditions = append([]metav1.Condition{accepted, programmed}, tlsConditions(x)...)
	x.st.GatewayAPI.Addresses = addresses
}

// notReadyWhy says why a listener is not served.
func (l *gwListener) notReadyWhy() findings {
	why := append(append(append(slices.Clone(l.accepted), l.certs...), l.conflicted...), l.gw.problems...)
	if l.set != nil {
		why = append(why, l.set.problems...)
	}
	return why
}

// listenerStatus is a listener's status: its supported kinds, attached
// routes and conditions; false for a second listener of a name (only
// files can have one: it is in its Gateway's or ListenerSet's conditions,
// the status lists listeners by name).
//
// A ListenerSet's listener (entry) that conflicts is not Accepted either,
// with the conflict's reason, nor Programmed with it: the ListenerSet
// API's conformance tests ask for both (ListenerSetHostnameConflict,
// ListenerSetProtocolConflict). A Gateway's own conflicted listener keeps
// Accepted True and Programmed False, Invalid, as before ListenerSets.
func (g *gatewayStage) listenerStatus(l *gwListener, gen int64, entry bool, named map[gwapiv1.SectionName]bool) (gwapiv1.ListenerStatus, bool) {
	if named[l.spec.Name] {
		return gwapiv1.ListenerStatus{}, false
	}
	named[l.spec.Name] = true
	refs := append(append(slices.Clone(l.certs), l.badKinds...), l.caRefs...)
	conflicted := cond(gwapiv1.ListenerConditionConflicted, false, gwapiv1.ListenerReasonNoConflicts, "no conflicts", gen)
	accepted := goodWhenEmpty(gwapiv1.ListenerConditionAccepted, l.accepted, gwapiv1.ListenerReasonAccepted, "accepted", gen)
	programmed := cond(gwapiv1.ListenerConditionProgrammed, true, gwapiv1.ListenerReasonProgrammed, "programmed", gen)
	if !l.ready() {
		programmed = cond(gwapiv1.ListenerConditionProgrammed, false, gwapiv1.ListenerReasonInvalid, l.notReadyWhy().message(), gen)
	}
	if len(l.conflicted) > 0 {
		conflicted = cond(gwapiv1.ListenerConditionConflicted, true, l.conflicted.reason(), l.conflicted.message(), gen)
		if entry && len(l.accepted) == 0 {
			accepted = cond(gwapiv1.ListenerConditionAccepted, false, l.conflicted.reason(), l.conflicted.message(), gen)
			programmed.Reason = l.conflicted.reason()
		}
	}
	kinds := l.kinds
	if kinds == nil {
		kinds = []gwapiv1.RouteGroupKind{}
	}
	return gwapiv1.ListenerStatus{
		Name:           l.spec.Name,
		SupportedKinds: kinds,
		AttachedRoutes: int32(min(len(l.attached), math.MaxInt32)),
		Conditions: []metav1.Condition{
			accepted,
			goodWhenEmpty(gwapiv1.ListenerConditionResolvedRefs, refs, gwapiv1.ListenerReasonResolvedRefs, "references resolved", gen),
			conflicted,
			programmed,
		},
	}, true
}

// programmed is a Gateway's Programmed condition, given its Accepted one,
// and its status.addresses.
func (g *gatewayStage) programmed(x *gwGateway, accepted metav1.Condition) (metav1.Condition, []gwapiv1.GatewayStatusAddress) {
	gen := x.gw.Generation
	programmed := cond(gwapiv1.GatewayConditionProgrammed, true, gwapiv1.GatewayReasonProgrammed, "programmed", gen)
	if accepted.Status != metav1.ConditionTrue {
		programmed = cond(gwapiv1.GatewayConditionProgrammed, false, gwapiv1.GatewayReasonInvalid, accepted.Message, gen)
	}
	addresses := g.addresses
	if g.perGateway {
		addresses = g.ownAddresses(x)
		if len(addresses) == 0 && programmed.Status == metav1.ConditionTrue {
			programmed = cond(gwapiv1.GatewayConditionProgrammed, false, gwapiv1.GatewayReasonAddressNotAssigned,
				"its Service "+g.envoyNS+"/"+GatewayServiceName(core.NsName(x.gw.Namespace, x.gw.Name))+" has no address yet", gen)
		}
	}
	if wantsIP(x.gw.Spec.Addresses) && !hasIP(addresses) && programmed.Status == metav1.ConditionTrue {
		programmed = cond(gwapiv1.GatewayConditionProgrammed, false, gwapiv1.GatewayReasonAddressNotAssigned,
			"spec.addresses asks for an IP address, and Envoy has none yet (its addresses are host names, or not known)", gen)
	}
	return programmed, addresses
}

// tlsConditions are the conditions of a Gateway's spec.tls, while they
// apply: InsecureFrontendValidationMode, and ResolvedRefs (only the
// backend client certificate is a Gateway's own reference).
func tlsConditions(x *gwGateway) []metav1.Condition {
	var out []metav1.Condition
	if c, ok := insecureFrontend(x); ok {
		out = append(out, c)
	}
	if t := x.gw.Spec.TLS; t != nil && t.Backend != nil {
		out = append(out, goodWhenEmpty(gwapiv1.GatewayConditionResolvedRefs, x.refs, gwapiv1.GatewayReasonResolvedRefs, "references resolved", x.gw.Generation))
	}
	return out
}

// insecureFrontend is the InsecureFrontendValidationMode condition of a
// Gateway a listener of which lets in clients whose certificate does not
// verify (AllowInsecureFallback); none otherwise (the API removes it).
func insecureFrontend(x *gwGateway) (metav1.Condition, bool) {
	for _, l := range x.listeners {
		if cv := l.clientValidation; cv != nil && cv.SkipVerification {
			return cond(gwapiv1.GatewayConditionInsecureFrontendValidationMode, true, gwapiv1.GatewayReasonConfigurationChanged,
				"listener "+string(l.spec.Name)+" lets in clients without a valid certificate (AllowInsecureFallback)", x.gw.Generation), true
		}
	}
	return metav1.Condition{}, false
}
