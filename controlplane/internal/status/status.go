// Package status turns the builder's findings about each object into the
// Kubernetes status the API promises: a Valid condition that is always
// present, errors and warnings as sub-conditions, observedGeneration, and a
// lastTransitionTime that moves only on a transition.
//
// It owns the rule by which a condition is set over the current one of its
// type (MergeCondition, in conditions.go: lastTransitionTime kept when the
// status does not change, a condition of a newer generation left alone),
// for every kind, Contour's and the Gateway API's: the statuses computed
// here and statuswriter's merges with the live object both use it
// (MergeConditions, KeepTimes), and no other package sets a condition's
// time.
package status

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/apis/projectcontour/v1alpha1"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// Problem is one error or warning about an object.
type Problem struct {
	Type    string `json:"type"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// Object is what the builder found about one object.
type Object struct {
	Ref        objects.Ref
	Generation int64
	Errors     []Problem
	Warnings   []Problem
	// Orphaned HTTPProxies are included by no root that is served;
	// OrphanedMessage says why when it is not MessageOrphaned (included
	// only by roots that are not served).
	Orphaned        bool
	OrphanedMessage string
	// LoadBalancer holds where clients reach a served root HTTPProxy (the
	// configured addresses of Envoy and its Service's): its
	// status.loadBalancer.ingress while it is valid.
	LoadBalancer []corev1.LoadBalancerIngress
	// ClusterName is the Envoy cluster of an ExtensionService.
	ClusterName string
	// Endpoints counts the backing endpoints of an ExtensionService, for
	// its Ready condition; nil for other kinds.
	Endpoints *Endpoints
	// GatewayAPI holds the findings of a Gateway API object (GatewayClass,
	// Gateway, HTTPRoute, GRPCRoute), whose status is not a Valid
	// condition; nil for the other kinds.
	GatewayAPI *GatewayAPI

	// seenErrors and seenWarnings index Errors and Warnings once they are
	// long, so that recording each problem once stays linear in their
	// number (an HTTPProxy can have thousands of invalid routes).
	seenErrors, seenWarnings map[Problem]struct{}
}

// Endpoints are the endpoints behind an ExtensionService's Services.
type Endpoints struct {
	Ready, Total int
	// ExternalName is the DNS name of an ExternalName Service: Envoy
	// resolves it, so readiness is not known here.
	ExternalName string
	// HealthChecked: Envoy checks the backend with gRPC health checks.
	HealthChecked bool
}

// WithErrors returns a copy of o with more errors (e.g. Envoy's rejection,
// which is known only after the build). o itself is never modified: the
// build's findings are shared.
func (o *Object) WithErrors(ps ...Problem) *Object {
	cp := *o
	cp.Errors, cp.seenErrors = append([]Problem(nil), o.Errors...), nil
	for _, p := range ps {
		cp.Errors = addProblem(cp.Errors, &cp.seenErrors, p)
	}
	return &cp
}

// WithWarnings returns a copy of o with more warnings, as WithErrors does
// with errors.
func (o *Object) WithWarnings(ps ...Problem) *Object {
	cp := *o
	cp.Warnings, cp.seenWarnings = append([]Problem(nil), o.Warnings...), nil
	for _, p := range ps {
		cp.Warnings = addProblem(cp.Warnings, &cp.seenWarnings, p)
	}
	return &cp
}

// Valid reports whether the object has no errors.
func (o *Object) Valid() bool { return len(o.Errors) == 0 && !o.Orphaned }

// AddError records an error once (the same error found twice, e.g. through
// two includes, is one error).
func (o *Object) AddError(typ, reason, message string) {
	o.Errors = addProblem(o.Errors, &o.seenErrors, Problem{typ, reason, message})
}

// AddWarning records a warning once.
func (o *Object) AddWarning(typ, reason, message string) {
	o.Warnings = addProblem(o.Warnings, &o.seenWarnings, Problem{typ, reason, message})
}

// indexAt is the length from which a list of problems gets an index: a
// short list is searched, which costs less than a map.
const indexAt = 16

// addProblem appends p to ps unless it is there already; seen is ps's index
// (built when ps grows past indexAt).
func addProblem(ps []Problem, seen *map[Problem]struct{}, p Problem) []Problem {
	if *seen == nil && len(ps) >= indexAt {
		*seen = make(map[Problem]struct{}, 2*len(ps))
		for _, q := range ps {
			(*seen)[q] = struct{}{}
		}
	}
	if *seen != nil {
		if _, ok := (*seen)[p]; ok {
			return ps
		}
		(*seen)[p] = struct{}{}
		return append(ps, p)
	}
	if slices.Contains(ps, p) {
		return ps
	}
	return append(ps, p)
}

// Reasons and messages of the Valid condition that are not an error's.
const (
	ReasonValid           = "Valid"
	ReasonMultipleReasons = "MultipleReasons"
	ReasonOrphaned        = "Orphaned"
	MessageValid          = "Valid HTTPProxy"
	MessageMultiple       = "Multiple reasons, see the errors stanza for more"
	MessageOrphaned       = "this HTTPProxy is not part of a delegation chain from a root HTTPProxy"
)

// ValidCondition computes the Valid condition for o. prev is the object's
// current Valid condition (nil when it has none), over which it is set by
// MergeCondition (prev's lastTransitionTime is kept when the status is the
// same).
func ValidCondition(o *Object, kindMessage string, prev *contourv1.DetailedCondition, now metav1.Time) contourv1.DetailedCondition {
	c := contourv1.DetailedCondition{Condition: metav1.Condition{
		Type:               contourv1.ValidConditionType,
		ObservedGeneration: o.Generation,
	}}
	switch {
	case o.Orphaned:
		msg := MessageOrphaned
		if o.OrphanedMessage != "" {
			msg = o.OrphanedMessage
		}
		c.Status = metav1.ConditionFalse
		c.Reason, c.Message = ReasonOrphaned, msg
		c.Errors = []contourv1.SubCondition{{Type: contourv1.ConditionTypeOrphanedError, Status: metav1.ConditionTrue, Reason: ReasonOrphaned, Message: msg}}
	case len(o.Errors) == 1:
		c.Status = metav1.ConditionFalse
		c.Reason, c.Message = o.Errors[0].Reason, o.Errors[0].Message
	case len(o.Errors) > 1:
		c.Status = metav1.ConditionFalse
		c.Reason, c.Message = ReasonMultipleReasons, MessageMultiple
	default:
		c.Status = metav1.ConditionTrue
		c.Reason, c.Message = ReasonValid, kindMessage
		if len(o.Warnings) > 0 {
			c.Message = kindMessage + " with warnings"
		}
	}
	for _, p := range o.Errors {
		c.Errors = append(c.Errors, sub(p))
	}
	for _, p := range o.Warnings {
		c.Warnings = append(c.Warnings, sub(p))
	}
	return MergeCondition(prev, c, now)
}

func sub(p Problem) contourv1.SubCondition {
	return contourv1.SubCondition{Type: p.Type, Status: metav1.ConditionTrue, Reason: p.Reason, Message: p.Message}
}

// HTTPProxy computes an HTTPProxy's status from the builder's findings and
// its current status. Conditions of other types (set by other controllers)
// are kept.
func HTTPProxy(o *Object, prev contourv1.HTTPProxyStatus, now metav1.Time) contourv1.HTTPProxyStatus {
	valid := ValidCondition(o, MessageValid, prev.GetCondition(contourv1.ValidConditionType), now)
	out := contourv1.HTTPProxyStatus{Conditions: MergeConditions(prev.Conditions, []contourv1.DetailedCondition{valid}, now)}
	switch {
	case o.Orphaned:
		out.CurrentStatus = contourv1.StatusOrphaned
	case valid.Status == metav1.ConditionTrue:
		out.CurrentStatus = contourv1.StatusValid
	default:
		out.CurrentStatus = contourv1.StatusInvalid
	}
	out.Description = valid.Message
	if valid.Status == metav1.ConditionTrue && len(o.LoadBalancer) > 0 {
		// Only a root that is served: an invalid one (Envoy's rejection
		// included) is reachable nowhere.
		out.LoadBalancer.Ingress = slices.Clone(o.LoadBalancer)
	}
	return out
}

// Conditions computes the conditions of an object whose status is only a
// list of conditions (ExtensionService, TLSCertificateDelegation): Valid
// and extra, at o's generation, set in prev by MergeConditions.
func Conditions(o *Object, kindMessage string, prev []contourv1.DetailedCondition, now metav1.Time, extra ...contourv1.DetailedCondition) []contourv1.DetailedCondition {
	valid := ValidCondition(o, kindMessage, FindCondition(prev, contourv1.ValidConditionType), now)
	for i := range extra {
		extra[i].ObservedGeneration = o.Generation
	}
	return MergeConditions(prev, append([]contourv1.DetailedCondition{valid}, extra...), now)
}

// ReadyConditionType is the ExtensionService condition that says whether
// its backends can take requests.
const ReadyConditionType = "Ready"

// Reasons of the Ready condition.
const (
	ReasonEndpointsReady   = "EndpointsReady"
	ReasonSomeNotReady     = "SomeEndpointsNotReady"
	ReasonNoReadyEndpoints = "NoReadyEndpoints"
	ReasonExternalName     = "ExternalNameService"
	ReasonInvalid          = "Invalid"
)

// ReadyCondition says whether an ExtensionService's backends can answer,
// from the ready endpoints of its Services. An ExternalName Service is
// resolved by Envoy, so its readiness is Unknown here.
func ReadyCondition(o *Object) contourv1.DetailedCondition {
	c := contourv1.DetailedCondition{Condition: metav1.Condition{Type: ReadyConditionType}}
	e := o.Endpoints
	switch {
	case !o.Valid() || e == nil:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, ReasonInvalid, "the ExtensionService is not valid: Envoy has no cluster for it"
	case e.ExternalName != "":
		c.Status, c.Reason = metav1.ConditionUnknown, ReasonExternalName
		c.Message = fmt.Sprintf("ExternalName Service %q is resolved by Envoy through DNS: its endpoints are not known to the control plane", e.ExternalName)
	case e.Ready == 0:
		c.Status, c.Reason = metav1.ConditionFalse, ReasonNoReadyEndpoints
		c.Message = fmt.Sprintf("%d/%d endpoints ready: requests to this extension fail", e.Ready, e.Total)
	case e.Ready < e.Total:
		c.Status, c.Reason = metav1.ConditionTrue, ReasonSomeNotReady
		c.Message = fmt.Sprintf("%d/%d endpoints ready", e.Ready, e.Total)
	default:
		c.Status, c.Reason = metav1.ConditionTrue, ReasonEndpointsReady
		c.Message = fmt.Sprintf("%d/%d endpoints ready", e.Ready, e.Total)
	}
	if e != nil && e.HealthChecked && c.Status != metav1.ConditionFalse {
		c.Message += "; Envoy health-checks them with gRPC health checks"
	}
	return c
}

// Messages of the Valid condition of the other kinds.
const (
	MessageValidExtensionService = "Valid ExtensionService"
	MessageValidDelegation       = "Valid TLSCertificateDelegation"
)

// ExtensionService computes an ExtensionService's status: Valid, Ready and
// the Envoy cluster name.
func ExtensionService(o *Object, prev v1alpha1.ExtensionServiceStatus, now metav1.Time) v1alpha1.ExtensionServiceStatus {
	return v1alpha1.ExtensionServiceStatus{
		Conditions:  Conditions(o, MessageValidExtensionService, prev.Conditions, now, ReadyCondition(o)),
		ClusterName: o.ClusterName,
	}
}

// TLSCertificateDelegation computes a TLSCertificateDelegation's status.
func TLSCertificateDelegation(o *Object, prev contourv1.TLSCertificateDelegationStatus, now metav1.Time) contourv1.TLSCertificateDelegationStatus {
	return contourv1.TLSCertificateDelegationStatus{Conditions: Conditions(o, MessageValidDelegation, prev.Conditions, now)}
}

// SortObjects orders findings by kind, namespace and name.
func SortObjects(os []*Object) {
	// Compared field by field, not with cmp.Or, which compares all three
	// (twenty thousand objects at scale, mostly of one kind and namespace).
	slices.SortFunc(os, func(x, y *Object) int {
		a, b := &x.Ref, &y.Ref
		if c := strings.Compare(a.Kind, b.Kind); c != 0 {
			return c
		}
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
}

// Summary is a one-line human description of an object's findings, for
// logs.
func Summary(o *Object) string {
	var parts []string
	for _, p := range o.Errors {
		parts = append(parts, "error "+p.Type+"/"+p.Reason+": "+p.Message)
	}
	for _, p := range o.Warnings {
		parts = append(parts, "warning "+p.Type+"/"+p.Reason+": "+p.Message)
	}
	if o.Orphaned {
		parts = append(parts, MessageOrphaned)
	}
	if len(parts) == 0 {
		return "valid"
	}
	return strings.Join(parts, "; ")
}

// Same reports whether two findings give the same status (without
// reflection: it runs for every object on every rebuild).
func (o *Object) Same(p *Object) bool {
	same := func(a, b *Endpoints) bool { return a == b || a != nil && b != nil && *a == *b }
	sameAddress := func(a, b corev1.LoadBalancerIngress) bool { return a.IP == b.IP && a.Hostname == b.Hostname }
	return o.Ref == p.Ref && o.Generation == p.Generation && o.Orphaned == p.Orphaned && o.ClusterName == p.ClusterName &&
		slices.Equal(o.Errors, p.Errors) && slices.Equal(o.Warnings, p.Warnings) && same(o.Endpoints, p.Endpoints) &&
		slices.EqualFunc(o.LoadBalancer, p.LoadBalancer, sameAddress) && o.GatewayAPI.same(p.GatewayAPI)
}
