package statuswriter

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	gatewayv1alpha1 "github.com/portcullis/portcullis/apis/gateway/v1alpha1"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/testapiserver"
)

const otherController = "example.com/other-controller"

var longAgo = metav1.NewTime(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC))

func cond(typ string, s metav1.ConditionStatus, gen int64) metav1.Condition {
	return metav1.Condition{Type: typ, Status: s, Reason: "Because", Message: typ + " " + string(s), ObservedGeneration: gen}
}

// TestGatewayAPIStatuses writes Gateway API statuses through a real API
// server: only on change, keeping transition times and what other
// controllers wrote, replacing our listeners and route parents.
func TestGatewayAPIStatuses(t *testing.T) {
	api := testapiserver.Start(t, testapiserver.CRDDir(t), testapiserver.GatewayAPICRDDir(t))
	ctx := context.Background()
	c := api.Client
	class := &gwapiv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "portcullis"}, Spec: gwapiv1.GatewayClassSpec{ControllerName: DefaultGatewayController}}
	gw := &gwapiv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "gw"}, Spec: gwapiv1.GatewaySpec{GatewayClassName: "portcullis",
		Listeners: []gwapiv1.Listener{{Name: "http", Port: 80, Protocol: gwapiv1.HTTPProtocolType}, {Name: "other", Port: 8080, Protocol: gwapiv1.HTTPProtocolType}}}}
	gwRef := gwapiv1.ParentReference{Name: "gw"}
	route := &gwapiv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: gwapiv1.HTTPRouteSpec{CommonRouteSpec: gwapiv1.CommonRouteSpec{ParentRefs: []gwapiv1.ParentReference{gwRef, {Name: "theirs"}}}}}
	grpc := &gwapiv1.GRPCRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "rpc"},
		Spec: gwapiv1.GRPCRouteSpec{CommonRouteSpec: gwapiv1.CommonRouteSpec{ParentRefs: []gwapiv1.ParentReference{gwRef}}}}
	for _, o := range []client.Object{class, gw, route, grpc} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	// What was there before: another controller's condition on the
	// Gateway and parent on the route, and our earlier statuses.
	other := cond("example.com/Inspected", metav1.ConditionTrue, 1)
	other.LastTransitionTime = longAgo
	oldProgrammed := cond("Programmed", metav1.ConditionTrue, 1)
	oldProgrammed.LastTransitionTime = longAgo
	gw.Status.Conditions = []metav1.Condition{other, oldProgrammed}
	theirParent := gwapiv1.RouteParentStatus{ParentRef: gwapiv1.ParentReference{Name: "theirs"}, ControllerName: otherController,
		Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", LastTransitionTime: longAgo}}}
	staleOurs := gwapiv1.RouteParentStatus{ParentRef: gwapiv1.ParentReference{Name: "gone"}, ControllerName: DefaultGatewayController,
		Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", LastTransitionTime: longAgo}}}
	route.Status.Parents = []gwapiv1.RouteParentStatus{theirParent, staleOurs}
	for _, o := range []client.Object{gw, route} {
		if err := c.Status().Update(ctx, o); err != nil {
			t.Fatal(err)
		}
	}

	k := &Kubernetes{Cache: c, Client: c, Log: slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))}
	ref := func(kind, ns, name string) objects.Ref { return objects.Ref{Kind: kind, Namespace: ns, Name: name} }
	parent := func(ref gwapiv1.ParentReference, conds ...metav1.Condition) gwapiv1.RouteParentStatus {
		return gwapiv1.RouteParentStatus{ParentRef: ref, ControllerName: DefaultGatewayController, Conditions: conds}
	}
	updates := func(programmed metav1.ConditionStatus, routeParents ...gwapiv1.RouteParentStatus) []Update {
		return []Update{
			{Ref: ref(objects.KindGatewayClass, "", "portcullis"), GatewayClass: &gwapiv1.GatewayClassStatus{
				Conditions: []metav1.Condition{cond("Accepted", metav1.ConditionTrue, 1)}}},
			{Ref: ref(objects.KindGateway, "default", "gw"), Gateway: &gwapiv1.GatewayStatus{
				Conditions: []metav1.Condition{cond("Accepted", metav1.ConditionTrue, 1), cond("Programmed", programmed, 1)},
				Listeners: []gwapiv1.ListenerStatus{{Name: "http", AttachedRoutes: 1,
					SupportedKinds: []gwapiv1.RouteGroupKind{{Kind: "HTTPRoute"}},
					Conditions:     []metav1.Condition{cond("Accepted", metav1.ConditionTrue, 1)}}},
			}},
			{Ref: ref(objects.KindHTTPRoute, "default", "web"), HTTPRoute: &gwapiv1.HTTPRouteStatus{RouteStatus: gwapiv1.RouteStatus{Parents: routeParents}}},
			{Ref: ref(objects.KindGRPCRoute, "default", "rpc"), GRPCRoute: &gwapiv1.GRPCRouteStatus{RouteStatus: gwapiv1.RouteStatus{
				Parents: []gwapiv1.RouteParentStatus{parent(gwRef, cond("Accepted", metav1.ConditionTrue, 1))}}}},
		}
	}

	k.Write(ctx, updates(metav1.ConditionTrue, parent(gwRef, cond("Accepted", metav1.ConditionTrue, 1))))
	if n := k.StatusWrites(); n != 4 {
		t.Errorf("first write: %d status writes, want 4", n)
	}
	read(t, c, gw, route, grpc, class)
	if got := conditionOf(gw.Status.Conditions, "Programmed"); !got.LastTransitionTime.Equal(&longAgo) {
		t.Errorf("Programmed stayed True but its lastTransitionTime moved to %v", got.LastTransitionTime)
	}
	if got := conditionOf(gw.Status.Conditions, other.Type); got == nil || !got.LastTransitionTime.Equal(&longAgo) {
		t.Errorf("another controller's condition was not kept: %+v", gw.Status.Conditions)
	}
	if got := conditionOf(gw.Status.Conditions, "Accepted"); got == nil || got.LastTransitionTime.IsZero() {
		t.Errorf("Accepted not written with a time: %+v", gw.Status.Conditions)
	}
	if len(gw.Status.Listeners) != 1 || gw.Status.Listeners[0].Name != "http" || gw.Status.Listeners[0].AttachedRoutes != 1 {
		t.Errorf("listeners %+v", gw.Status.Listeners)
	}
	if got := parentNames(route.Status.Parents); got != "theirs/"+otherController+" gw/"+string(DefaultGatewayController) {
		t.Errorf("HTTPRoute parents %s: want theirs kept, our stale one (gone) removed, gw added", got)
	}
	if len(grpc.Status.Parents) != 1 || len(class.Status.Conditions) != 1 {
		t.Errorf("GRPCRoute parents %+v, GatewayClass conditions %+v", grpc.Status.Parents, class.Status.Conditions)
	}
	firstAccepted := conditionOf(gw.Status.Conditions, "Accepted").LastTransitionTime

	// The same statuses again: nothing to write.
	time.Sleep(1100 * time.Millisecond) // a new second, so that a moved time would show
	k.Write(ctx, updates(metav1.ConditionTrue, parent(gwRef, cond("Accepted", metav1.ConditionTrue, 1))))
	if n := k.StatusWrites(); n != 4 {
		t.Errorf("unchanged statuses: %d status writes in all, want still 4", n)
	}

	// A transition moves only its own time; a route with no parent of
	// ours any more keeps only the others'.
	k.Write(ctx, updates(metav1.ConditionFalse))
	read(t, c, gw, route)
	if got := conditionOf(gw.Status.Conditions, "Programmed"); got.Status != metav1.ConditionFalse || got.LastTransitionTime.Equal(&longAgo) {
		t.Errorf("Programmed after its transition: %+v", got)
	}
	if got := conditionOf(gw.Status.Conditions, "Accepted").LastTransitionTime; !got.Equal(&firstAccepted) {
		t.Errorf("Accepted did not change but its time moved from %v to %v", firstAccepted, got)
	}
	if got := parentNames(route.Status.Parents); got != "theirs/"+otherController {
		t.Errorf("HTTPRoute parents %s, want only the other controller's", got)
	}

	// A condition another replica wrote from a newer generation is left
	// alone by a write from an older snapshot.
	newer := cond("Programmed", metav1.ConditionTrue, 7)
	newer.LastTransitionTime = longAgo
	gw.Status.Conditions = []metav1.Condition{newer}
	if err := c.Status().Update(ctx, gw); err != nil {
		t.Fatal(err)
	}
	k.Write(ctx, updates(metav1.ConditionFalse)[1:2])
	read(t, c, gw)
	if got := conditionOf(gw.Status.Conditions, "Programmed"); got.ObservedGeneration != 7 || got.Status != metav1.ConditionTrue {
		t.Errorf("a newer generation's condition was overwritten: %+v", got)
	}

	checkPolicyAncestors(t, k, c)
}

// A policy's ancestors are merged as a route's parents are.
func checkPolicyAncestors(t *testing.T, k *Kubernetes, c client.Client) {
	t.Helper()
	ctx := context.Background()
	target := []gwapiv1.LocalPolicyTargetReferenceWithSectionName{{LocalPolicyTargetReference: gwapiv1.LocalPolicyTargetReference{
		Group: gwapiv1.GroupName, Kind: "Gateway", Name: "gw"}}}
	policy := &gatewayv1alpha1.ExtAuthPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "auth"},
		Spec: gatewayv1alpha1.ExtAuthPolicySpec{TargetRefs: target, Disabled: true}}
	if err := c.Create(ctx, policy); err != nil {
		t.Fatal(err)
	}
	accepted := []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", LastTransitionTime: longAgo}}
	policy.Status.Ancestors = []gwapiv1.PolicyAncestorStatus{
		{AncestorRef: gwapiv1.ParentReference{Name: "gone"}, ControllerName: DefaultGatewayController, Conditions: accepted},
		{AncestorRef: gwapiv1.ParentReference{Name: "theirs"}, ControllerName: otherController, Conditions: accepted},
	}
	if err := c.Status().Update(ctx, policy); err != nil {
		t.Fatal(err)
	}
	before := k.StatusWrites()
	update := []Update{{Ref: objects.Ref{Kind: objects.KindExtAuthPolicy, Namespace: "default", Name: "auth"}, ExtAuthPolicy: &gwapiv1.PolicyStatus{
		Ancestors: []gwapiv1.PolicyAncestorStatus{{AncestorRef: gwapiv1.ParentReference{Name: "gw"}, Conditions: []metav1.Condition{cond("Accepted", metav1.ConditionTrue, 1)}}}}}}
	k.Write(ctx, update)
	k.Write(ctx, update)
	if n := k.StatusWrites() - before; n != 1 {
		t.Errorf("the same policy status twice: %d writes, want 1", n)
	}
	read(t, c, policy)
	var got []string
	for _, a := range policy.Status.Ancestors {
		got = append(got, string(a.AncestorRef.Name)+"/"+string(a.ControllerName))
	}
	if want := "theirs/" + otherController + " gw/" + string(DefaultGatewayController); strings.Join(got, " ") != want {
		t.Errorf("policy ancestors %v, want %s", got, want)
	}
}

// The log writer logs Gateway API statuses with their listeners and
// parents, and not again when only times differ.
func TestLogGatewayAPI(t *testing.T) {
	var buf bytes.Buffer
	l := &Log{Log: slog.New(slog.NewTextHandler(&buf, nil))}
	at := func(ts metav1.Time) []Update {
		c := cond("Accepted", metav1.ConditionFalse, 0)
		c.LastTransitionTime = ts
		return []Update{
			{Ref: objects.Ref{Kind: objects.KindGateway, Namespace: "a", Name: "gw"}, Gateway: &gwapiv1.GatewayStatus{
				Conditions: []metav1.Condition{c}, Listeners: []gwapiv1.ListenerStatus{{Name: "http", AttachedRoutes: 2, Conditions: []metav1.Condition{c}}}}},
			{Ref: objects.Ref{Kind: objects.KindHTTPRoute, Namespace: "a", Name: "web"}, HTTPRoute: &gwapiv1.HTTPRouteStatus{RouteStatus: gwapiv1.RouteStatus{
				Parents: []gwapiv1.RouteParentStatus{{ParentRef: gwapiv1.ParentReference{Name: "gw"}, ControllerName: DefaultGatewayController, Conditions: []metav1.Condition{c}}}}}},
		}
	}
	l.Write(context.Background(), at(longAgo))
	l.Write(context.Background(), at(metav1.Now()))
	out := buf.String()
	for _, want := range []string{"Gateway a/gw", `\"listeners\":[{\"name\":\"http\",\"attachedRoutes\":2`, "HTTPRoute a/web", `\"parentRef\":{\"name\":\"gw\"}`, `\"reason\":\"Because\"`} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %s:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "level=INFO"); n != 2 {
		t.Errorf("%d lines, want 2 (a time change is no change):\n%s", n, out)
	}
}

func read(t *testing.T, c client.Client, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(o), o); err != nil {
			t.Fatal(err)
		}
	}
}

func conditionOf(cs []metav1.Condition, typ string) *metav1.Condition {
	for i := range cs {
		if cs[i].Type == typ {
			return &cs[i]
		}
	}
	return nil
}

func parentNames(ps []gwapiv1.RouteParentStatus) string {
	var names []string
	for _, p := range ps {
		names = append(names, string(p.ParentRef.Name)+"/"+string(p.ControllerName))
	}
	return strings.Join(names, " ")
}
