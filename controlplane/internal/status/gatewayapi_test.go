package status

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// A condition keeps its lastTransitionTime while its status is the same,
// in a Gateway's conditions, its listeners' and a route's parents'; and
// Envoy's rejection turns Programmed (Gateway) and Accepted (route) False.
func TestGatewayAPIStatus(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Hour))
	c := func(typ string, ok bool, reason string) metav1.Condition {
		s := metav1.ConditionFalse
		if ok {
			s = metav1.ConditionTrue
		}
		return metav1.Condition{Type: typ, Status: s, Reason: reason, ObservedGeneration: 2}
	}
	gw := &Object{Ref: objects.Ref{Kind: objects.KindGateway, Namespace: "ns", Name: "gw"}, GatewayAPI: &GatewayAPI{
		Conditions: []metav1.Condition{c("Accepted", true, "Accepted"), c("Programmed", true, "Programmed")},
		Listeners:  []gwapiv1.ListenerStatus{{Name: "http", Conditions: []metav1.Condition{c("Programmed", true, "Programmed")}}},
	}}
	first := Gateway(gw, gwapiv1.GatewayStatus{}, t0)
	if got := first.Conditions[0].LastTransitionTime; got != t0 {
		t.Errorf("first time = %v", got)
	}
	again := Gateway(gw, first, t1)
	if again.Conditions[1].LastTransitionTime != t0 || again.Listeners[0].Conditions[0].LastTransitionTime != t0 {
		t.Errorf("unchanged conditions moved: %+v", again)
	}
	rejected := Gateway(gw.WithErrors(Problem{Type: TypeEnvoyRejected, Reason: ReasonRejectedByEnvoy, Message: "no"}), again, t1)
	if p := rejected.Conditions[1]; p.Status != metav1.ConditionFalse || p.Reason != string(gwapiv1.GatewayReasonInvalid) || p.LastTransitionTime != t1 {
		t.Errorf("rejected Programmed = %+v", p)
	}
	if gw.GatewayAPI.Conditions[1].Status != metav1.ConditionTrue {
		t.Error("rendering modified the findings")
	}

	parent := gwapiv1.ParentReference{Name: "gw"}
	route := &Object{Ref: objects.Ref{Kind: objects.KindHTTPRoute, Namespace: "ns", Name: "r"}, GatewayAPI: &GatewayAPI{
		Parents: []gwapiv1.RouteParentStatus{{ParentRef: parent, ControllerName: "c", Conditions: []metav1.Condition{c("Accepted", true, "Accepted")}}},
	}}
	prev := gwapiv1.RouteStatus{Parents: []gwapiv1.RouteParentStatus{
		{ParentRef: parent, ControllerName: "other", Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, LastTransitionTime: t1}}},
		{ParentRef: parent, ControllerName: "c", Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, LastTransitionTime: t0}}},
	}}
	got := Route(route, prev, t1)
	if len(got.Parents) != 1 || got.Parents[0].Conditions[0].LastTransitionTime != t0 {
		t.Errorf("route status = %+v", got)
	}
	rejectedRoute := Route(route.WithErrors(Problem{Type: TypeEnvoyRejected, Reason: ReasonRejectedByEnvoy, Message: "no"}), got, t1)
	if c := rejectedRoute.Parents[0].Conditions[0]; c.Status != metav1.ConditionFalse || c.Reason != ReasonRejectedByEnvoy || c.Message != "no" || c.LastTransitionTime != t1 {
		t.Errorf("rejected route parent = %+v", c)
	}
	if route.GatewayAPI.Parents[0].Conditions[0].Status != metav1.ConditionTrue {
		t.Error("rendering a route modified the findings")
	}
	if empty := Route(&Object{Ref: route.Ref}, gwapiv1.RouteStatus{}, t0); empty.Parents == nil {
		t.Error("parents must be an empty list, not null (a required field)")
	}
	if !route.Same(route.WithErrors()) || route.Same(&Object{Ref: route.Ref}) {
		t.Error("Same must compare the Gateway API findings")
	}
}

// A policy's ancestors keep their conditions' lastTransitionTime while
// unchanged (matched by ancestorRef and controller), move it on a change,
// and Envoy's rejection turns an Accepted ancestor False.
func TestPolicyStatus(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Hour))
	kind := gwapiv1.Kind("Gateway")
	web, api := gwapiv1.ParentReference{Kind: &kind, Name: "web"}, gwapiv1.ParentReference{Kind: &kind, Name: "api"}
	accepted := metav1.Condition{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", ObservedGeneration: 1}
	conflicted := metav1.Condition{Type: "Accepted", Status: metav1.ConditionFalse, Reason: "Conflicted", ObservedGeneration: 1}
	policy := &Object{Ref: objects.Ref{Kind: objects.KindExtAuthPolicy, Namespace: "ns", Name: "p"}, GatewayAPI: &GatewayAPI{
		Ancestors: []gwapiv1.PolicyAncestorStatus{
			{AncestorRef: web, ControllerName: "c", Conditions: []metav1.Condition{accepted}},
			{AncestorRef: api, ControllerName: "c", Conditions: []metav1.Condition{conflicted}},
		},
	}}
	prev := gwapiv1.PolicyStatus{Ancestors: []gwapiv1.PolicyAncestorStatus{
		{AncestorRef: web, ControllerName: "other", Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, LastTransitionTime: t1}}},
		{AncestorRef: web, ControllerName: "c", Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, LastTransitionTime: t0}}},
		{AncestorRef: api, ControllerName: "c", Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, LastTransitionTime: t0}}},
	}}
	got := Policy(policy, prev, t1)
	if len(got.Ancestors) != 2 || got.Ancestors[0].Conditions[0].LastTransitionTime != t0 || got.Ancestors[1].Conditions[0].LastTransitionTime != t1 {
		t.Errorf("policy status = %+v", got)
	}
	rejected := Policy(policy.WithErrors(Problem{Type: TypeEnvoyRejected, Reason: ReasonRejectedByEnvoy, Message: "no"}), got, t1)
	if c := rejected.Ancestors[0].Conditions[0]; c.Status != metav1.ConditionFalse || c.Reason != ReasonRejectedByEnvoy || c.Message != "no" {
		t.Errorf("rejected ancestor = %+v", c)
	}
	if c := rejected.Ancestors[1].Conditions[0]; c.Reason != "Conflicted" {
		t.Errorf("a Conflicted ancestor keeps its reason under a rejection: %+v", c)
	}
	if policy.GatewayAPI.Ancestors[0].Conditions[0].Status != metav1.ConditionTrue {
		t.Error("rendering modified the findings")
	}
	if empty := Policy(&Object{Ref: policy.Ref}, gwapiv1.PolicyStatus{}, t0); empty.Ancestors == nil {
		t.Error("ancestors must be an empty list, not null (a required field)")
	}
}

// An extension's failure (an error under Closed, a warning under Open) is
// a condition ExtensionError of its own on a Gateway and on each route
// parent, with the problems' messages; without one there is none.
func TestExtensionErrorCondition(t *testing.T) {
	accepted := metav1.Condition{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", ObservedGeneration: 4}
	base := &Object{GatewayAPI: &GatewayAPI{
		Conditions: []metav1.Condition{accepted},
		Parents:    []gwapiv1.RouteParentStatus{{ParentRef: gwapiv1.ParentReference{Name: "gw"}, Conditions: []metav1.Condition{accepted}}},
	}}
	p := Problem{Type: TypeExtensionError, Reason: ReasonExtensionHookFailed, Message: `extension "x": hook PostRouteModify failed`}
	now := metav1.Now()
	for name, o := range map[string]*Object{"error (Closed)": base.WithErrors(p), "warning (Open)": base.WithWarnings(p)} {
		t.Run(name, func(t *testing.T) {
			for what, conds := range map[string][]metav1.Condition{
				"gateway": Gateway(o, gwapiv1.GatewayStatus{}, now).Conditions,
				"route":   Route(o, gwapiv1.RouteStatus{}, now).Parents[0].Conditions,
			} {
				c := meta.FindStatusCondition(conds, TypeExtensionError)
				if c == nil || c.Status != metav1.ConditionTrue || c.Reason != ReasonExtensionHookFailed || c.Message != p.Message || c.ObservedGeneration != 4 {
					t.Errorf("%s: ExtensionError = %+v", what, c)
				}
				if a := meta.FindStatusCondition(conds, "Accepted"); a == nil || a.Status != metav1.ConditionTrue {
					t.Errorf("%s: Accepted = %+v, want it left alone", what, a)
				}
			}
		})
	}
	if c := meta.FindStatusCondition(Route(base, gwapiv1.RouteStatus{}, now).Parents[0].Conditions, TypeExtensionError); c != nil {
		t.Errorf("no failure, but ExtensionError = %+v", c)
	}
}
