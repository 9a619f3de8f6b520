package v1

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDetailedConditionAddErrorAndWarning(t *testing.T) {
	dc := DetailedCondition{Condition: metav1.Condition{Type: ValidConditionType, Status: metav1.ConditionTrue}}

	dc.AddError(ConditionTypeServiceError, "ServiceNotFound", "Service service-does-not-exist not found")
	dc.AddError(ConditionTypeTLSError, "TLSSecretNotFound", "TLS Secret testsecret-does-not-exist not found")
	dc.AddError(ConditionTypeServiceError, "ServiceNotFound", "Service service-does-not-exist not found") // duplicate
	dc.AddError(ConditionTypeServiceError, "ServiceNotFound", "Service other not found")                  // same type and reason, other message
	dc.AddWarning(ConditionTypeServiceError, "NoEndpoints", "Service s has no endpoints")

	wantErrors := []SubCondition{
		{Type: "ServiceError", Status: metav1.ConditionTrue, Reason: "ServiceNotFound", Message: "Service service-does-not-exist not found"},
		{Type: "TLSError", Status: metav1.ConditionTrue, Reason: "TLSSecretNotFound", Message: "TLS Secret testsecret-does-not-exist not found"},
		{Type: "ServiceError", Status: metav1.ConditionTrue, Reason: "ServiceNotFound", Message: "Service other not found"},
	}
	if !reflect.DeepEqual(dc.Errors, wantErrors) {
		t.Errorf("Errors = %+v\nwant %+v", dc.Errors, wantErrors)
	}
	wantWarnings := []SubCondition{
		{Type: "ServiceError", Status: metav1.ConditionTrue, Reason: "NoEndpoints", Message: "Service s has no endpoints"},
	}
	if !reflect.DeepEqual(dc.Warnings, wantWarnings) {
		t.Errorf("Warnings = %+v\nwant %+v", dc.Warnings, wantWarnings)
	}
	// The helpers record sub-conditions only; the caller owns the condition itself.
	if dc.Status != metav1.ConditionTrue || dc.Reason != "" || dc.Message != "" {
		t.Errorf("condition itself changed: %+v", dc.Condition)
	}
}

func TestHTTPProxyStatusGetCondition(t *testing.T) {
	var nilStatus *HTTPProxyStatus
	if got := nilStatus.GetCondition(ValidConditionType); got != nil {
		t.Fatalf("nil status: got %+v", got)
	}

	s := HTTPProxyStatus{}
	if got := s.GetCondition(ValidConditionType); got != nil {
		t.Fatalf("empty status: got %+v", got)
	}

	s.Conditions = []DetailedCondition{
		{Condition: metav1.Condition{Type: "example.com/Other", Status: metav1.ConditionFalse}},
		{Condition: metav1.Condition{Type: ValidConditionType, Status: metav1.ConditionTrue}},
	}
	c := s.GetCondition(ValidConditionType)
	if c == nil || c.Type != ValidConditionType {
		t.Fatalf("GetCondition(Valid) = %+v", c)
	}
	// The result aliases the slice element.
	c.AddError(ConditionTypeOrphanedError, "Orphaned", "this HTTPProxy is not part of a delegation chain from a root HTTPProxy")
	c.Status = metav1.ConditionFalse
	if s.Conditions[1].Status != metav1.ConditionFalse || len(s.Conditions[1].Errors) != 1 {
		t.Errorf("change through GetCondition result not kept: %+v", s.Conditions[1])
	}
	if got := s.GetCondition("Missing"); got != nil {
		t.Errorf("GetCondition(Missing) = %+v", got)
	}
}

func TestConditionConstants(t *testing.T) {
	// Values are part of the API (they appear in status); pin them.
	for got, want := range map[string]string{
		ValidConditionType:                    "Valid",
		ConditionTypeRootNamespaceError:       "RootNamespaceError",
		ConditionTypeVirtualHostError:         "VirtualHostError",
		ConditionTypeTLSError:                 "TLSError",
		ConditionTypeIncludeError:             "IncludeError",
		ConditionTypeRouteError:               "RouteError",
		ConditionTypeServiceError:             "ServiceError",
		ConditionTypeAuthError:                "AuthError",
		ConditionTypeExtProcError:             "ExtProcError",
		ConditionTypePathConditionsError:      "PathConditionsError",
		ConditionTypeHeaderConditionsError:    "HeaderConditionsError",
		ConditionTypeHeadersPolicyError:       "HeadersPolicyError",
		ConditionTypeOrphanedError:            "Orphaned",
		ConditionTypeTLSFallbackError:         "TLSFallbackError",
		ConditionTypeTLSClientValidationError: "TLSClientValidationError",
		StatusValid:                           "valid",
		StatusInvalid:                         "invalid",
		StatusOrphaned:                        "orphaned",
	} {
		if got != want {
			t.Errorf("constant = %q, want %q", got, want)
		}
	}
}
