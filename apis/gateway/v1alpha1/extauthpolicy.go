package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
)

// ExtAuthPolicy sets the external authorization of Gateways, Gateway
// listeners, HTTPRoutes, GRPCRoutes and route rules: the authorization
// server (an ExtensionService) and its settings, as an HTTPProxy's
// authorization does for a virtual host, or switches authorization off
// for its targets (disabled: true), the global authorization of the
// control plane's configuration included.
//
// Where several policies apply to a route, the most specific attachment
// wins: a route rule (HTTPRoute or GRPCRoute with sectionName), the route,
// a Gateway listener (Gateway with sectionName), the Gateway.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,path=extauthpolicies,singular=extauthpolicy,shortName=eap,categories=portcullis
// +kubebuilder:subresource:status
// +kubebuilder:metadata:labels="gateway.networking.k8s.io/policy=Inherited"
// +kubebuilder:printcolumn:name="Target Kind",type="string",JSONPath=".spec.targetRefs[0].kind",description="Kind of the first target"
// +kubebuilder:printcolumn:name="Target Name",type="string",JSONPath=".spec.targetRefs[0].name",description="Name of the first target"
// +kubebuilder:printcolumn:name="Disabled",type="boolean",JSONPath=".spec.disabled",description="Authorization switched off for the targets"
// +kubebuilder:printcolumn:name="Accepted",type="string",JSONPath=`.status.ancestors[0].conditions[?(@.type=="Accepted")].status`,description="Accepted by the first ancestor"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type ExtAuthPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`

	// Spec is the authorization of the targets.
	//
	// +required
	Spec ExtAuthPolicySpec `json:"spec"`

	// Status says, per target (status.ancestors[].ancestorRef), whether the
	// policy is in force there (Accepted) or another policy won (Conflicted).
	//
	// +optional
	Status gwapiv1.PolicyStatus `json:"status,omitzero"`
}

// ExtAuthPolicySpec is the external authorization of the policy's targets:
// an authorization server, or the opt-out (disabled: true and no server).
//
// The settings are given once: at the top of spec (the defaults, as
// before defaults and overrides existed), in defaults, or in overrides.
//
// +kubebuilder:validation:XValidation:message="extensionRef is required unless disabled is true",rule="has(self.defaults) || has(self.overrides) || (has(self.disabled) && self.disabled) || has(self.extensionRef)"
// +kubebuilder:validation:XValidation:message="disabled: true switches authorization off and takes no extensionRef, responseTimeout, failOpen, withRequestBody or authPolicy",rule="!(has(self.disabled) && self.disabled) || (!has(self.extensionRef) && !has(self.responseTimeout) && !(has(self.failOpen) && self.failOpen) && !has(self.withRequestBody) && !has(self.authPolicy))"
// +kubebuilder:validation:XValidation:message="the settings are given once: at the top of spec, in defaults or in overrides",rule="[has(self.defaults), has(self.overrides), (has(self.extensionRef) || has(self.responseTimeout) || (has(self.failOpen) && self.failOpen) || has(self.withRequestBody) || has(self.authPolicy) || (has(self.disabled) && self.disabled))].filter(x, x).size() <= 1"
type ExtAuthPolicySpec struct {
	// TargetRefs are the Gateways (a listener with sectionName), HTTPRoutes
	// and GRPCRoutes (a rule with sectionName) of the policy's namespace
	// that the policy applies to.
	//
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:XValidation:message="targetRefs may name only a Gateway, an HTTPRoute or a GRPCRoute of group gateway.networking.k8s.io",rule="self.all(r, r.group == 'gateway.networking.k8s.io' && (r.kind == 'Gateway' || r.kind == 'HTTPRoute' || r.kind == 'GRPCRoute'))"
	// +kubebuilder:validation:XValidation:message="sectionName must be specified when targetRefs includes 2 or more references to the same target",rule="self.all(p1, self.all(p2, p1.group == p2.group && p1.kind == p2.kind && p1.name == p2.name ? ((!has(p1.sectionName) || p1.sectionName == '') == (!has(p2.sectionName) || p2.sectionName == '')) : true))"
	// +kubebuilder:validation:XValidation:message="sectionName must be unique when targetRefs includes 2 or more references to the same target",rule="self.all(p1, self.exists_one(p2, p1.group == p2.group && p1.kind == p2.kind && p1.name == p2.name && (((!has(p1.sectionName) || p1.sectionName == '') && (!has(p2.sectionName) || p2.sectionName == '')) || (has(p1.sectionName) && has(p2.sectionName) && p1.sectionName == p2.sectionName))))"
	TargetRefs []gwapiv1.LocalPolicyTargetReferenceWithSectionName `json:"targetRefs"`

	// ExtensionServiceRef names the ExtensionService of the authorization
	// server, as an HTTPProxy's authorization.extensionRef does. Required
	// unless disabled is true.
	//
	// +optional
	ExtensionServiceRef *contourv1.ExtensionServiceReference `json:"extensionRef,omitempty"`

	// AuthPolicy is the default authorization policy of the targets' routes:
	// disabled: true installs the authorization switched off, context is
	// sent to the server with every check.
	//
	// +optional
	AuthPolicy *contourv1.AuthorizationPolicy `json:"authPolicy,omitempty"`

	// ResponseTimeout configures maximum time to wait for a check response from the authorization server.
	// Timeout durations are expressed in the Go [Duration format](https://godoc.org/time#ParseDuration).
	// Valid time units are "ns", "us" (or "µs"), "ms", "s", "m", "h".
	// The string "infinity" is also a valid input and specifies no timeout.
	//
	// +optional
	// +kubebuilder:validation:Pattern=`^(((\d*(\.\d*)?h)|(\d*(\.\d*)?m)|(\d*(\.\d*)?s)|(\d*(\.\d*)?ms)|(\d*(\.\d*)?us)|(\d*(\.\d*)?µs)|(\d*(\.\d*)?ns))+|infinity|infinite)$`
	ResponseTimeout string `json:"responseTimeout,omitempty"`

	// If FailOpen is true, the client request is forwarded to the upstream service
	// even if the authorization server fails to respond. This field should not be
	// set in most cases. It is intended for use only while migrating applications
	// from internal authorization to external authorization.
	//
	// +optional
	FailOpen bool `json:"failOpen,omitempty"`

	// WithRequestBody specifies configuration for sending the client request's body to authorization server.
	//
	// +optional
	WithRequestBody *contourv1.AuthorizationServerBufferSettings `json:"withRequestBody,omitempty"`

	// Disabled switches external authorization off for the targets: no
	// check is made, neither by an authorization server of a less specific
	// policy nor by the global authorization of the control plane's
	// configuration. It stands alone: a policy with disabled: true names no
	// server.
	//
	// +optional
	Disabled bool `json:"disabled,omitempty"`

	// Defaults are the policy's settings as defaults (GEP-713): a policy
	// attached to a more specific target (a listener, a route, a rule)
	// replaces them. The settings at the top of spec are defaults too.
	//
	// +optional
	Defaults *ExtAuthPolicySettings `json:"defaults,omitempty"`

	// Overrides are the policy's settings as overrides (GEP-713): they
	// apply to every route of the targets, and no policy attached to a
	// more specific target replaces them, switches them off or weakens
	// them (its status says it is overridden). Of two policies with
	// overrides, the one of the less specific target wins.
	//
	// +optional
	Overrides *ExtAuthPolicySettings `json:"overrides,omitempty"`
}

// ExtAuthPolicySettings are the settings of an ExtAuthPolicy's defaults
// or overrides: the fields of the same names at the top of its spec.
//
// +kubebuilder:validation:XValidation:message="extensionRef is required unless disabled is true",rule="(has(self.disabled) && self.disabled) || has(self.extensionRef)"
// +kubebuilder:validation:XValidation:message="disabled: true switches authorization off and takes no extensionRef, responseTimeout, failOpen, withRequestBody or authPolicy",rule="!(has(self.disabled) && self.disabled) || (!has(self.extensionRef) && !has(self.responseTimeout) && !(has(self.failOpen) && self.failOpen) && !has(self.withRequestBody) && !has(self.authPolicy))"
type ExtAuthPolicySettings struct {
	// ExtensionServiceRef names the ExtensionService of the authorization
	// server. Required unless disabled is true.
	//
	// +optional
	ExtensionServiceRef *contourv1.ExtensionServiceReference `json:"extensionRef,omitempty"`

	// AuthPolicy is the authorization policy of the targets' routes:
	// disabled: true installs the authorization switched off, context is
	// sent to the server with every check.
	//
	// +optional
	AuthPolicy *contourv1.AuthorizationPolicy `json:"authPolicy,omitempty"`

	// ResponseTimeout is how long to wait for a check, as the spec's.
	//
	// +optional
	// +kubebuilder:validation:Pattern=`^(((\d*(\.\d*)?h)|(\d*(\.\d*)?m)|(\d*(\.\d*)?s)|(\d*(\.\d*)?ms)|(\d*(\.\d*)?us)|(\d*(\.\d*)?µs)|(\d*(\.\d*)?ns))+|infinity|infinite)$`
	ResponseTimeout string `json:"responseTimeout,omitempty"`

	// FailOpen forwards a request when the server does not answer.
	//
	// +optional
	FailOpen bool `json:"failOpen,omitempty"`

	// WithRequestBody sends (part of) the request body with the check.
	//
	// +optional
	WithRequestBody *contourv1.AuthorizationServerBufferSettings `json:"withRequestBody,omitempty"`

	// Disabled switches external authorization off for the targets.
	//
	// +optional
	Disabled bool `json:"disabled,omitempty"`
}

// Settings are the policy's settings, from overrides (override true),
// defaults, or the top of spec (defaults too).
func (s *ExtAuthPolicySpec) Settings() (settings ExtAuthPolicySettings, override bool) {
	switch {
	case s.Overrides != nil:
		return *s.Overrides, true
	case s.Defaults != nil:
		return *s.Defaults, false
	}
	return ExtAuthPolicySettings{
		ExtensionServiceRef: s.ExtensionServiceRef, AuthPolicy: s.AuthPolicy, ResponseTimeout: s.ResponseTimeout,
		FailOpen: s.FailOpen, WithRequestBody: s.WithRequestBody, Disabled: s.Disabled,
	}, false
}

// AuthorizationServer returns the policy's settings as an HTTPProxy's
// authorization (a copy), for code that serves both; nil when the policy
// is the opt-out (disabled: true).
func (s *ExtAuthPolicySpec) AuthorizationServer() *contourv1.AuthorizationServer {
	settings, _ := s.Settings()
	return settings.AuthorizationServer()
}

// AuthorizationServer returns the settings as an HTTPProxy's
// authorization (a copy); nil for the opt-out (disabled: true).
func (s *ExtAuthPolicySettings) AuthorizationServer() *contourv1.AuthorizationServer {
	if s.Disabled {
		return nil
	}
	a := &contourv1.AuthorizationServer{
		AuthPolicy:      s.AuthPolicy.DeepCopy(),
		ResponseTimeout: s.ResponseTimeout,
		FailOpen:        s.FailOpen,
		WithRequestBody: s.WithRequestBody.DeepCopy(),
	}
	if s.ExtensionServiceRef != nil {
		a.ExtensionServiceRef = *s.ExtensionServiceRef
	}
	return a
}

// ExtAuthPolicyList is a list of ExtAuthPolicies.
//
// +kubebuilder:object:root=true
type ExtAuthPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`
	Items           []ExtAuthPolicy `json:"items"`
}
