package status

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
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
