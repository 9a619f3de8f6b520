package statuswriter

import (
	"context"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	gatewayv1alpha1 "github.com/portcullis/portcullis/apis/gateway/v1alpha1"
	"github.com/portcullis/portcullis/controlplane/internal/config"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// DefaultGatewayController is the Gateway API controller name of a control
// plane whose configuration names none (gateway.controllerName's default).
const DefaultGatewayController gwapiv1.GatewayController = config.DefaultGatewayControllerName

// The Gateway API's rules for writing status, which the merges below keep:
// a controller changes only what it owns (conditions of the types it sets,
// route parents naming its controller), merges conditions by type, moves
// lastTransitionTime only when a condition's status changes, and leaves a
// condition observed at a newer generation than its own alone (its
// snapshot is older than the object). The conditions' part is
// status.MergeCondition's, as for the Contour kinds.

// writeGatewayAPI writes the status of a Gateway API object or one of our
// policies.
func (k *Kubernetes) writeGatewayAPI(ctx context.Context, key types.NamespacedName, u Update) error {
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	switch {
	case u.GatewayClass != nil:
		return writeStatus(ctx, k, key, &gwapiv1.GatewayClass{}, func(o *gwapiv1.GatewayClass) *gwapiv1.GatewayClassStatus { return &o.Status },
			func(cur *gwapiv1.GatewayClassStatus) gwapiv1.GatewayClassStatus {
				return mergeGatewayClass(cur, u.GatewayClass, now)
			})
	case u.Gateway != nil:
		return writeStatus(ctx, k, key, &gwapiv1.Gateway{}, func(o *gwapiv1.Gateway) *gwapiv1.GatewayStatus { return &o.Status },
			func(cur *gwapiv1.GatewayStatus) gwapiv1.GatewayStatus { return mergeGateway(cur, u.Gateway, now) })
	case u.HTTPRoute != nil:
		return writeStatus(ctx, k, key, &gwapiv1.HTTPRoute{}, func(o *gwapiv1.HTTPRoute) *gwapiv1.HTTPRouteStatus { return &o.Status },
			func(cur *gwapiv1.HTTPRouteStatus) gwapiv1.HTTPRouteStatus {
				return gwapiv1.HTTPRouteStatus{RouteStatus: k.mergeRoute(cur.RouteStatus, u.HTTPRoute.RouteStatus, now)}
			})
	case u.GRPCRoute != nil:
		return writeStatus(ctx, k, key, &gwapiv1.GRPCRoute{}, func(o *gwapiv1.GRPCRoute) *gwapiv1.GRPCRouteStatus { return &o.Status },
			func(cur *gwapiv1.GRPCRouteStatus) gwapiv1.GRPCRouteStatus {
				return gwapiv1.GRPCRouteStatus{RouteStatus: k.mergeRoute(cur.RouteStatus, u.GRPCRoute.RouteStatus, now)}
			})
	case u.TLSRoute != nil:
		return writeStatus(ctx, k, key, &gwapiv1.TLSRoute{}, func(o *gwapiv1.TLSRoute) *gwapiv1.TLSRouteStatus { return &o.Status },
			func(cur *gwapiv1.TLSRouteStatus) gwapiv1.TLSRouteStatus {
				return gwapiv1.TLSRouteStatus{RouteStatus: k.mergeRoute(cur.RouteStatus, u.TLSRoute.RouteStatus, now)}
			})
	case u.TCPRoute != nil:
		return writeStatus(ctx, k, key, &gwapiv1.TCPRoute{}, func(o *gwapiv1.TCPRoute) *gwapiv1.TCPRouteStatus { return &o.Status },
			func(cur *gwapiv1.TCPRouteStatus) gwapiv1.TCPRouteStatus {
				return gwapiv1.TCPRouteStatus{RouteStatus: k.mergeRoute(cur.RouteStatus, u.TCPRoute.RouteStatus, now)}
			})
	case u.UDPRoute != nil:
		return writeStatus(ctx, k, key, &gwapiv1.UDPRoute{}, func(o *gwapiv1.UDPRoute) *gwapiv1.UDPRouteStatus { return &o.Status },
			func(cur *gwapiv1.UDPRouteStatus) gwapiv1.UDPRouteStatus {
				return gwapiv1.UDPRouteStatus{RouteStatus: k.mergeRoute(cur.RouteStatus, u.UDPRoute.RouteStatus, now)}
			})
	case u.ListenerSet != nil:
		return writeStatus(ctx, k, key, &gwapiv1.ListenerSet{}, func(o *gwapiv1.ListenerSet) *gwapiv1.ListenerSetStatus { return &o.Status },
			func(cur *gwapiv1.ListenerSetStatus) gwapiv1.ListenerSetStatus {
				return mergeListenerSet(cur, u.ListenerSet, now)
			})
	case u.ExtAuthPolicy != nil:
		return writeStatus(ctx, k, key, &gatewayv1alpha1.ExtAuthPolicy{}, func(o *gatewayv1alpha1.ExtAuthPolicy) *gwapiv1.PolicyStatus { return &o.Status },
			func(cur *gwapiv1.PolicyStatus) gwapiv1.PolicyStatus { return k.mergePolicy(cur, u.ExtAuthPolicy, now) })
	case u.ExtProcPolicy != nil:
		return writeStatus(ctx, k, key, &gatewayv1alpha1.ExtProcPolicy{}, func(o *gatewayv1alpha1.ExtProcPolicy) *gwapiv1.PolicyStatus { return &o.Status },
			func(cur *gwapiv1.PolicyStatus) gwapiv1.PolicyStatus { return k.mergePolicy(cur, u.ExtProcPolicy, now) })
	case u.BackendTLSPolicy != nil:
		return writeStatus(ctx, k, key, &gwapiv1.BackendTLSPolicy{}, func(o *gwapiv1.BackendTLSPolicy) *gwapiv1.PolicyStatus { return &o.Status },
			func(cur *gwapiv1.PolicyStatus) gwapiv1.PolicyStatus {
				return k.mergePolicy(cur, u.BackendTLSPolicy, now)
			})
	case u.ExtensionPolicy != nil:
		return k.writeExtensionPolicy(ctx, key, u, now)
	}
	return nil
}

// mergeGatewayClass: the class names our controller, so its supported
// features are ours; its conditions are merged.
func mergeGatewayClass(cur, want *gwapiv1.GatewayClassStatus, now metav1.Time) gwapiv1.GatewayClassStatus {
	out := *want
	out.Conditions = status.MergeConditions(cur.Conditions, want.Conditions, now)
	return out
}

// mergeGateway: the Gateway is of our class, so its addresses and
// listeners are ours (replaced, each listener keeping its conditions'
// transition times); its conditions are merged.
func mergeGateway(cur, want *gwapiv1.GatewayStatus, now metav1.Time) gwapiv1.GatewayStatus {
	out := *want
	// InsecureFrontendValidationMode and ResolvedRefs are ours (the
	// Gateway is of our class), set while what they say about holds
	// (AllowInsecureFallback, spec.tls.backend), and removed after, as
	// the API asks.
	conds := cur.Conditions
	for _, typ := range []gwapiv1.GatewayConditionType{gwapiv1.GatewayConditionInsecureFrontendValidationMode, gwapiv1.GatewayConditionResolvedRefs} {
		if status.FindCondition(want.Conditions, string(typ)) == nil && status.FindCondition(conds, string(typ)) != nil {
			conds = slices.DeleteFunc(slices.Clone(conds), func(c metav1.Condition) bool { return c.Type == string(typ) })
		}
	}
	out.Conditions = status.MergeConditions(conds, want.Conditions, now)
	out.Addresses = make([]gwapiv1.GatewayStatusAddress, len(want.Addresses))
	for i, a := range want.Addresses {
		if a.Type == nil {
			a.Type = ptr.To(gwapiv1.IPAddressType)
		}
		out.Addresses[i] = a
	}
	out.Listeners = make([]gwapiv1.ListenerStatus, len(want.Listeners))
	for i, l := range want.Listeners {
		var prev []metav1.Condition
		if j := slices.IndexFunc(cur.Listeners, func(c gwapiv1.ListenerStatus) bool { return c.Name == l.Name }); j >= 0 {
			prev = cur.Listeners[j].Conditions
		}
		l.Conditions = status.KeepTimes(prev, l.Conditions, now)
		l.SupportedKinds = defaultKinds(l.SupportedKinds)
		out.Listeners[i] = l
	}
	return out
}

// mergeListenerSet: the ListenerSet's parent is a Gateway of our class, so
// its listeners are ours (replaced, as a Gateway's); its conditions are
// merged.
func mergeListenerSet(cur, want *gwapiv1.ListenerSetStatus, now metav1.Time) gwapiv1.ListenerSetStatus {
	out := *want
	out.Conditions = status.MergeConditions(cur.Conditions, want.Conditions, now)
	out.Listeners = make([]gwapiv1.ListenerEntryStatus, len(want.Listeners))
	for i, l := range want.Listeners {
		var prev []metav1.Condition
		if j := slices.IndexFunc(cur.Listeners, func(c gwapiv1.ListenerEntryStatus) bool { return c.Name == l.Name }); j >= 0 {
			prev = cur.Listeners[j].Conditions
		}
		l.Conditions = status.KeepTimes(prev, l.Conditions, now)
		l.SupportedKinds = defaultKinds(l.SupportedKinds)
		out.Listeners[i] = l
	}
	return out
}

// defaultKinds is a copy of a listener's supported kinds with the CRD's
// default group.
func defaultKinds(ks []gwapiv1.RouteGroupKind) []gwapiv1.RouteGroupKind {
	ks = slices.Clone(ks)
	for k := range ks {
		if ks[k].Group == nil {
			ks[k].Group = ptr.To(gwapiv1.Group(gwapiv1.GroupName))
		}
	}
	return ks
}

// The CRDs' defaults in the status fields we write (a group, a kind, an
// address type) are filled in as the API server fills them: else what we
// want would differ from what we wrote at every comparison, and be written
// again at every build.

// defaultParentRef is ref with the CRD's defaults.
func defaultParentRef(ref gwapiv1.ParentReference) gwapiv1.ParentReference {
	if ref.Group == nil {
		ref.Group = ptr.To(gwapiv1.Group(gwapiv1.GroupName))
	}
	if ref.Kind == nil {
		ref.Kind = ptr.To(gwapiv1.Kind("Gateway"))
	}
	return ref
}

// mergeRoute replaces the route's parents naming our controller with
// want's (which names only ours): other controllers' parents stay where
// they are, ours keep their place and their conditions' transition times,
// ours that want no longer has (a parent the route stopped referencing) go.
func (k *Kubernetes) mergeRoute(cur, want gwapiv1.RouteStatus, now metav1.Time) gwapiv1.RouteStatus {
	return gwapiv1.RouteStatus{Parents: k.mergeParents(cur.Parents, want.Parents, now)}
}

// mergePolicy does for a policy's ancestors what mergeRoute does for a
// route's parents: an ancestor status has a parent status's fields under
// another name.
func (k *Kubernetes) mergePolicy(cur, want *gwapiv1.PolicyStatus, now metav1.Time) gwapiv1.PolicyStatus {
	asParents := func(as []gwapiv1.PolicyAncestorStatus) []gwapiv1.RouteParentStatus {
		out := make([]gwapiv1.RouteParentStatus, len(as))
		for i, a := range as {
			out[i] = gwapiv1.RouteParentStatus{ParentRef: a.AncestorRef, ControllerName: a.ControllerName, Conditions: a.Conditions}
		}
		return out
	}
	merged := k.mergeParents(asParents(cur.Ancestors), asParents(want.Ancestors), now)
	out := gwapiv1.PolicyStatus{Ancestors: make([]gwapiv1.PolicyAncestorStatus, len(merged))}
	for i, p := range merged {
		out.Ancestors[i] = gwapiv1.PolicyAncestorStatus{AncestorRef: p.ParentRef, ControllerName: p.ControllerName, Conditions: p.Conditions}
	}
	return out
}

// mergeParents merges route parent statuses (or policy ancestor ones), as
// mergeRoute says.
func (k *Kubernetes) mergeParents(cur, want []gwapiv1.RouteParentStatus, now metav1.Time) []gwapiv1.RouteParentStatus {
	ours := k.GatewayController
	if ours == "" {
		ours = DefaultGatewayController
	}
	pending := slices.Clone(want)
	for i := range pending {
		if pending[i].ControllerName == "" {
			pending[i].ControllerName = ours
		}
		pending[i].ParentRef = defaultParentRef(pending[i].ParentRef)
	}
	// Never nil: status.parents (and ancestors) is a required field.
	out := []gwapiv1.RouteParentStatus{}
	for _, c := range cur {
		if c.ControllerName != ours {
			out = append(out, c)
			continue
		}
		j := slices.IndexFunc(pending, func(w gwapiv1.RouteParentStatus) bool { return sameParent(w, c) })
		if j < 0 {
			continue
		}
		w := pending[j]
		w.Conditions = status.KeepTimes(c.Conditions, w.Conditions, now)
		out = append(out, w)
		pending = slices.Delete(pending, j, j+1)
	}
	for _, w := range pending {
		w.Conditions = status.KeepTimes(nil, w.Conditions, now)
		out = append(out, w)
	}
	return out
}

func sameParent(a, b gwapiv1.RouteParentStatus) bool {
	return a.ControllerName == b.ControllerName && equality.Semantic.DeepEqual(a.ParentRef, b.ParentRef)
}

// writeExtensionPolicy writes status.ancestors of a policy of an
// extension's kind, through the status subresource, as for our own
// policies; the other fields of its status (the extension's) are kept.
// The object is read from the API server: the informers' cache holds
// only our own kinds.
func (k *Kubernetes) writeExtensionPolicy(ctx context.Context, key types.NamespacedName, u Update, now metav1.Time) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(u.ExtensionGVK)
		if err := k.Client.Get(ctx, key, obj); err != nil {
			return err
		}
		cur := ExtensionPolicyStatus(obj)
		merged := k.mergePolicy(&cur, u.ExtensionPolicy, now)
		if equality.Semantic.DeepEqual(cur, merged) {
			return nil
		}
		ancestors, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&merged)
		if err != nil {
			return err
		}
		if err := unstructured.SetNestedField(obj.Object, ancestors["ancestors"], "status", "ancestors"); err != nil {
			return err
		}
		k.writes.Add(1)
		return k.Client.Status().Update(ctx, obj)
	})
}

// ExtensionPolicyStatus is status.ancestors of a policy of an extension's
// kind (empty when it has none or they do not decode).
func ExtensionPolicyStatus(obj *unstructured.Unstructured) gwapiv1.PolicyStatus {
	var st gwapiv1.PolicyStatus
	raw, found, err := unstructured.NestedSlice(obj.Object, "status", "ancestors")
	if err != nil || !found {
		return st
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(map[string]any{"ancestors": raw}, &st); err != nil {
		return gwapiv1.PolicyStatus{}
	}
	return st
}
