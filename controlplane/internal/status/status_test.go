package status

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/apis/projectcontour/v1alpha1"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

func TestHTTPProxyStatus(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Hour))
	ref := objects.Ref{Kind: "HTTPProxy", Namespace: "ns", Name: "p"}
	one := &Object{Ref: ref, Generation: 4, Errors: []Problem{{"TLSError", "SecretNotFound", "missing"}}}
	two := &Object{Ref: ref, Generation: 4, Errors: []Problem{{"TLSError", "SecretNotFound", "missing"}, {"ServiceError", "X", "y"}}}
	warn := &Object{Ref: ref, Generation: 5, Warnings: []Problem{{"ServiceError", "NoEndpoints", "none"}}}
	orphan := &Object{Ref: ref, Generation: 1, Orphaned: true}

	tests := []struct {
		name                     string
		obj                      *Object
		prev                     contourv1.HTTPProxyStatus
		now                      metav1.Time
		wantStatus, wantReason   string
		wantCurrent, wantMessage string
		wantErrors, wantWarnings int
		wantTransition           metav1.Time
	}{
		{"one error propagates", one, contourv1.HTTPProxyStatus{}, t0, "False", "SecretNotFound", "invalid", "missing", 1, 0, t0},
		{"several errors", two, contourv1.HTTPProxyStatus{}, t0, "False", ReasonMultipleReasons, "invalid", MessageMultiple, 2, 0, t0},
		{"warnings keep valid", warn, contourv1.HTTPProxyStatus{}, t0, "True", ReasonValid, "valid", "Valid HTTPProxy with warnings", 0, 1, t0},
		{"orphaned", orphan, contourv1.HTTPProxyStatus{}, t0, "False", ReasonOrphaned, "orphaned", MessageOrphaned, 1, 0, t0},
		{"no transition keeps the time", one, HTTPProxy(two, contourv1.HTTPProxyStatus{}, t0), t1, "False", "SecretNotFound", "invalid", "missing", 1, 0, t0},
		{"a transition moves the time", warn, HTTPProxy(one, contourv1.HTTPProxyStatus{}, t0), t1, "True", ReasonValid, "valid", "Valid HTTPProxy with warnings", 0, 1, t1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := HTTPProxy(tt.obj, tt.prev, tt.now)
			c := got.GetCondition(contourv1.ValidConditionType)
			if c == nil {
				t.Fatal("no Valid condition")
			}
			if string(c.Status) != tt.wantStatus || c.Reason != tt.wantReason || c.Message != tt.wantMessage {
				t.Errorf("Valid = %s/%s/%q, want %s/%s/%q", c.Status, c.Reason, c.Message, tt.wantStatus, tt.wantReason, tt.wantMessage)
			}
			if got.CurrentStatus != tt.wantCurrent || got.Description != tt.wantMessage {
				t.Errorf("currentStatus/description = %s/%q, want %s/%q", got.CurrentStatus, got.Description, tt.wantCurrent, tt.wantMessage)
			}
			if len(c.Errors) != tt.wantErrors || len(c.Warnings) != tt.wantWarnings {
				t.Errorf("errors/warnings = %d/%d, want %d/%d", len(c.Errors), len(c.Warnings), tt.wantErrors, tt.wantWarnings)
			}
			if !c.LastTransitionTime.Equal(&tt.wantTransition) {
				t.Errorf("lastTransitionTime = %v, want %v", c.LastTransitionTime, tt.wantTransition)
			}
			if c.ObservedGeneration != tt.obj.Generation {
				t.Errorf("observedGeneration = %d, want %d", c.ObservedGeneration, tt.obj.Generation)
			}
		})
	}
}

func TestOtherConditionsAreKept(t *testing.T) {
	prev := contourv1.HTTPProxyStatus{Conditions: []contourv1.DetailedCondition{{Condition: metav1.Condition{Type: "DNSProvisioned", Status: "True"}}}}
	got := HTTPProxy(&Object{}, prev, metav1.Now())
	if len(got.Conditions) != 2 || got.Conditions[0].Type != "DNSProvisioned" || got.Conditions[1].Type != contourv1.ValidConditionType {
		t.Errorf("conditions = %+v, want DNSProvisioned kept and Valid added", got.Conditions)
	}
}

func TestProblemsAreRecordedOnce(t *testing.T) {
	o := &Object{}
	o.AddError("T", "R", "m")
	o.AddError("T", "R", "m")
	o.AddWarning("T", "R", "m")
	if len(o.Errors) != 1 || len(o.Warnings) != 1 {
		t.Errorf("errors/warnings = %d/%d, want 1/1", len(o.Errors), len(o.Warnings))
	}
}

func TestReadyCondition(t *testing.T) {
	ref := objects.Ref{Kind: "ExtensionService", Namespace: "ns", Name: "e"}
	invalid := &Object{Ref: ref, Errors: []Problem{{"SpecError", "X", "y"}}, Endpoints: &Endpoints{Ready: 1, Total: 1}}
	tests := []struct {
		name                   string
		obj                    *Object
		wantStatus, wantReason string
		wantMessage            string
	}{
		{"all ready", &Object{Ref: ref, Endpoints: &Endpoints{Ready: 3, Total: 3}}, "True", ReasonEndpointsReady, "3/3 endpoints ready"},
		{"some ready", &Object{Ref: ref, Endpoints: &Endpoints{Ready: 2, Total: 3}}, "True", ReasonSomeNotReady, "2/3 endpoints ready"},
		{"none ready", &Object{Ref: ref, Endpoints: &Endpoints{Ready: 0, Total: 2}}, "False", ReasonNoReadyEndpoints, "0/2 endpoints ready: requests to this extension fail"},
		{"health checked", &Object{Ref: ref, Endpoints: &Endpoints{Ready: 1, Total: 1, HealthChecked: true}}, "True", ReasonEndpointsReady, "1/1 endpoints ready; Envoy health-checks them with gRPC health checks"},
		{"external name", &Object{Ref: ref, Endpoints: &Endpoints{ExternalName: "auth.example.com"}}, "Unknown", ReasonExternalName,
			`ExternalName Service "auth.example.com" is resolved by Envoy through DNS: its endpoints are not known to the control plane`},
		{"invalid", invalid, "False", ReasonInvalid, "the ExtensionService is not valid: Envoy has no cluster for it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ReadyCondition(tt.obj)
			if c.Type != ReadyConditionType || string(c.Status) != tt.wantStatus || c.Reason != tt.wantReason || c.Message != tt.wantMessage {
				t.Errorf("Ready = %s %s/%s/%q, want %s/%s/%q", c.Type, c.Status, c.Reason, c.Message, tt.wantStatus, tt.wantReason, tt.wantMessage)
			}
		})
	}
}

func TestExtensionServiceStatusTransitions(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	ref := objects.Ref{Kind: "ExtensionService", Namespace: "ns", Name: "e"}
	ready := &Object{Ref: ref, Generation: 2, ClusterName: "extension/ns/e", Endpoints: &Endpoints{Ready: 2, Total: 2}}
	fewer := &Object{Ref: ref, Generation: 2, ClusterName: "extension/ns/e", Endpoints: &Endpoints{Ready: 1, Total: 2}}
	gone := &Object{Ref: ref, Generation: 2, ClusterName: "extension/ns/e", Endpoints: &Endpoints{Ready: 0, Total: 0}}

	first := ExtensionService(ready, v1alpha1.ExtensionServiceStatus{}, t0)
	tests := []struct {
		name                   string
		obj                    *Object
		wantReady              string
		wantValidT, wantReadyT metav1.Time
	}{
		{"same status keeps both times", fewer, "True", t0, t0},
		{"Ready flips, Valid does not", gone, "False", t0, t1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ExtensionService(tt.obj, first, t1)
			if got.ClusterName != "extension/ns/e" {
				t.Errorf("clusterName = %q", got.ClusterName)
			}
			v, r := FindCondition(got.Conditions, "Valid"), FindCondition(got.Conditions, ReadyConditionType)
			if v == nil || r == nil {
				t.Fatalf("conditions = %+v, want Valid and Ready", got.Conditions)
			}
			if string(r.Status) != tt.wantReady || r.ObservedGeneration != 2 {
				t.Errorf("Ready = %s (generation %d), want %s (2)", r.Status, r.ObservedGeneration, tt.wantReady)
			}
			if !v.LastTransitionTime.Equal(&tt.wantValidT) || !r.LastTransitionTime.Equal(&tt.wantReadyT) {
				t.Errorf("transition times Valid %v Ready %v, want %v %v", v.LastTransitionTime, r.LastTransitionTime, tt.wantValidT, tt.wantReadyT)
			}
		})
	}
}

func TestWithErrorsCopies(t *testing.T) {
	o := &Object{Errors: []Problem{{"T", "R", "m"}}}
	cp := o.WithErrors(Problem{"EnvoyRejected", "EnvoyNACK", "x"}, Problem{"T", "R", "m"})
	if len(o.Errors) != 1 || len(cp.Errors) != 2 || cp.Valid() {
		t.Errorf("original %d errors, copy %d (valid %v); want 1 and 2 (invalid)", len(o.Errors), len(cp.Errors), cp.Valid())
	}
}

func TestSame(t *testing.T) {
	base := func() *Object {
		return &Object{Ref: objects.Ref{Kind: "ExtensionService", Name: "e"}, Generation: 1, Errors: []Problem{{"T", "R", "m"}},
			Endpoints: &Endpoints{Ready: 1, Total: 2}}
	}
	tests := []struct {
		name   string
		change func(*Object)
		want   bool
	}{
		{"identical findings", func(*Object) {}, true},
		{"generation", func(o *Object) { o.Generation = 2 }, false},
		{"an error", func(o *Object) { o.Errors = append(o.Errors, Problem{"EnvoyRejected", "RejectedByEnvoy", "x"}) }, false},
		{"endpoints", func(o *Object) { o.Endpoints = &Endpoints{Ready: 0, Total: 2} }, false},
		{"no endpoints", func(o *Object) { o.Endpoints = nil }, false},
		{"orphaned", func(o *Object) { o.Orphaned = true }, false},
		{"an address", func(o *Object) { o.LoadBalancer = []corev1.LoadBalancerIngress{{IP: "198.51.100.7"}} }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := base()
			tt.change(o)
			if got := base().Same(o); got != tt.want {
				t.Errorf("Same = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestHTTPProxyLoadBalancer: status.loadBalancer.ingress is where a valid
// root is reached; an invalid or orphaned HTTPProxy is reached nowhere.
func TestHTTPProxyLoadBalancer(t *testing.T) {
	lb := []corev1.LoadBalancerIngress{{IP: "198.51.100.7"}, {Hostname: "lb.example.com"}}
	ref := objects.Ref{Kind: "HTTPProxy", Namespace: "ns", Name: "p"}
	for _, tc := range []struct {
		name string
		obj  *Object
		want []corev1.LoadBalancerIngress
	}{
		{"valid root", &Object{Ref: ref, LoadBalancer: lb}, lb},
		{"valid root with warnings", &Object{Ref: ref, LoadBalancer: lb, Warnings: []Problem{{"ServiceError", "NoEndpoints", "none"}}}, lb},
		{"valid, no address known", &Object{Ref: ref}, nil},
		{"rejected by Envoy after the build", (&Object{Ref: ref, LoadBalancer: lb}).WithErrors(Problem{"EnvoyRejected", "RejectedByEnvoy", "x"}), nil},
		{"orphaned", &Object{Ref: ref, LoadBalancer: lb, Orphaned: true}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prev := contourv1.HTTPProxyStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "192.0.2.1"}}}}
			got := HTTPProxy(tc.obj, prev, metav1.Now()).LoadBalancer.Ingress
			if !equality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("status.loadBalancer.ingress %v, want %v", got, tc.want)
			}
			if len(got) > 0 && &got[0] == &tc.obj.LoadBalancer[0] {
				t.Error("the status shares the findings' addresses")
			}
		})
	}
}
