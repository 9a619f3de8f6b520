package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ValidConditionType is the type of the condition, always present on a
// processed HTTPProxy, that says whether the object is valid.
const ValidConditionType = "Valid"

// Types of the error and warning sub-conditions (DetailedCondition.Errors
// and DetailedCondition.Warnings).
const (
	ConditionTypeRootNamespaceError    = "RootNamespaceError"
	ConditionTypeVirtualHostError      = "VirtualHostError"
	ConditionTypeTLSError              = "TLSError"
	ConditionTypeIncludeError          = "IncludeError"
	ConditionTypeRouteError            = "RouteError"
	ConditionTypeServiceError          = "ServiceError"
	ConditionTypeAuthError             = "AuthError"
	ConditionTypeExtProcError          = "ExtProcError"
	ConditionTypePathConditionsError   = "PathConditionsError"
	ConditionTypeHeaderConditionsError = "HeaderConditionsError"
	// ConditionTypeQueryParameterConditionsError: a queryParameter
	// condition is invalid (as in Contour).
	ConditionTypeQueryParameterConditionsError = "QueryParameterConditionsError"
	ConditionTypeHeadersPolicyError            = "HeadersPolicyError"
	ConditionTypeOrphanedError                 = "Orphaned"
	ConditionTypeTLSFallbackError              = "TLSFallbackError"
	ConditionTypeTLSClientValidationError      = "TLSClientValidationError"
	// ConditionTypeDelegationError is a TLSCertificateDelegation's.
	ConditionTypeDelegationError = "DelegationError"
	// ConditionTypeSpecError: a field of the object itself is wrong
	// (unknown, given twice, or not implemented), whatever it holds.
	ConditionTypeSpecError = "SpecError"
	// ConditionTypeIPFilterError: an ipAllowPolicy or ipDenyPolicy is
	// invalid (as in Contour).
	ConditionTypeIPFilterError = "IPFilterError"
	// ConditionTypeCORSError: a corsPolicy is invalid (as in Contour).
	ConditionTypeCORSError = "CORSError"
	// ConditionTypeJWTVerificationError: the JWT providers or a route's
	// JWT verification policy are invalid (as in Contour).
	ConditionTypeJWTVerificationError = "JWTVerificationError"
	// ConditionTypeTCPProxyError: a tcpproxy (or the TLS passthrough
	// that needs one) is invalid (as in Contour).
	ConditionTypeTCPProxyError = "TCPProxyError"
	// ConditionTypeTCPProxyIncludeError: a tcpproxy's include cannot be
	// followed (not found, a root, a cycle), as in Contour.
	ConditionTypeTCPProxyIncludeError = "TCPProxyIncludeError"
)

// Legacy values of HTTPProxyStatus.CurrentStatus.
const (
	StatusValid    = "valid"
	StatusInvalid  = "invalid"
	StatusOrphaned = "orphaned"
)

// SubCondition is a Condition-like type intended for use as a subcondition inside a DetailedCondition.
//
// It contains a subset of the Condition fields.
//
// It is intended for warnings and errors, so `type` names should use abnormal-true polarity,
// that is, they should be of the form "ErrorPresent: true".
//
// The expected lifecycle for these errors is that they should only be present when the error or warning is,
// and should be removed when they are not relevant.
type SubCondition struct {
	// Type of condition in `CamelCase` or in `foo.example.com/CamelCase`.
	//
	// This must be in abnormal-true polarity, that is, `ErrorFound` or `controller.io/ErrorFound`.
	//
	// The regex it matches is (dns1123SubdomainFmt/)?(qualifiedNameFmt)
	//
	// +required
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$`
	// +kubebuilder:validation:MaxLength=316
	Type string `json:"type"`

	// Status of the condition, one of True, False, Unknown.
	//
	// +required
	// +kubebuilder:validation:Enum=True;False;Unknown
	Status metav1.ConditionStatus `json:"status"`

	// Reason contains a programmatic identifier indicating the reason for the condition's last transition.
	// Producers of specific condition types may define expected values and meanings for this field,
	// and whether the values are considered a guaranteed API.
	//
	// The value should be a CamelCase string.
	//
	// This field may not be empty.
	//
	// +required
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:Pattern=`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`
	Reason string `json:"reason"`

	// Message is a human readable message indicating details about the transition.
	//
	// This may be an empty string.
	//
	// +required
	// +kubebuilder:validation:MaxLength=32768
	Message string `json:"message"`
}

// DetailedCondition is an extension of the normal Kubernetes conditions, with two extra
// fields to hold sub-conditions, which provide more detailed reasons for the state (True or False)
// of the condition.
//
// `errors` holds information about sub-conditions which are fatal to that condition and render its state False.
//
// `warnings` holds information about sub-conditions which are not fatal to that condition and do not force the state to be False.
//
// Remember that Conditions have a type, a status, and a reason.
//
// The type is the type of the condition, the most important one in this CRD set is `Valid`.
// `Valid` is a positive-polarity condition: when it is `status: true` there are no problems.
//
// In more detail, `status: true` means that the object is has been ingested into Contour with no errors.
// `warnings` may still be present, and will be indicated in the Reason field. There must be zero entries in the `errors`
// slice in this case.
//
// `Valid`, `status: false` means that the object has had one or more fatal errors during processing into Contour.
// The details of the errors will be present under the `errors` field. There must be at least one error in the `errors`
// slice if `status` is `false`.
//
// For DetailedConditions of types other than `Valid`, the Condition must be in the negative polarity.
// When they have `status` `true`, there is an error. There must be at least one entry in the `errors` Subcondition slice.
// When they have `status` `false`, there are no serious errors, and there must be zero entries in the `errors` slice.
// In either case, there may be entries in the `warnings` slice.
//
// Regardless of the polarity, the `reason` and `message` fields must be updated with either the detail of the reason
// (if there is one and only one entry in total across both the `errors` and `warnings` slices), or
// `MultipleReasons` if there is more than one entry.
type DetailedCondition struct {
	metav1.Condition `json:",inline"`

	// Errors contains a slice of relevant error subconditions for this object.
	//
	// Subconditions are expected to appear when relevant (when there is an error), and disappear when not relevant.
	// An empty slice here indicates no errors.
	//
	// +optional
	Errors []SubCondition `json:"errors,omitempty"`

	// Warnings contains a slice of relevant warning subconditions for this object.
	//
	// Subconditions are expected to appear when relevant (when there is a warning), and disappear when not relevant.
	// An empty slice here indicates no warnings.
	//
	// +optional
	Warnings []SubCondition `json:"warnings,omitempty"`
}

// AddError records an error sub-condition (with status True: the error is
// present). An identical entry already present is not added twice. The
// condition's own status, reason and message are left to the caller.
func (dc *DetailedCondition) AddError(condType, reason, message string) {
	dc.Errors = addSubCondition(dc.Errors, condType, reason, message)
}

// AddWarning records a warning sub-condition (with status True). An
// identical entry already present is not added twice. Warnings never change
// the condition's own status.
func (dc *DetailedCondition) AddWarning(condType, reason, message string) {
	dc.Warnings = addSubCondition(dc.Warnings, condType, reason, message)
}

func addSubCondition(subs []SubCondition, condType, reason, message string) []SubCondition {
	sc := SubCondition{Type: condType, Status: metav1.ConditionTrue, Reason: reason, Message: message}
	for _, s := range subs {
		if s == sc {
			return subs
		}
	}
	return append(subs, sc)
}

// GetCondition returns the condition of the given type, or nil. The result
// points into s.Conditions, so changes through it are kept.
func (s *HTTPProxyStatus) GetCondition(condType string) *DetailedCondition {
	if s == nil {
		return nil
	}
	for i := range s.Conditions {
		if s.Conditions[i].Type == condType {
			return &s.Conditions[i]
		}
	}
	return nil
}
