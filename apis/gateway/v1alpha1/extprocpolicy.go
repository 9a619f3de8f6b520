package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
)

// ExtProcPolicy sets the external processing of Gateways, Gateway
// listeners, HTTPRoutes, GRPCRoutes and route rules: the processor (an
// ExtensionService) and its settings, as an HTTPProxy's extProc does for a
// virtual host, or switches processing off for its targets (disabled:
// true), the global processing of the control plane's configuration
// included.
//
// Where several policies apply to a route, the most specific attachment
// wins: a route rule (HTTPRoute or GRPCRoute with sectionName), the route,
// a Gateway listener (Gateway with sectionName), the Gateway.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,path=extprocpolicies,singular=extprocpolicy,shortName=epp,categories=portcullis
// +kubebuilder:subresource:status
// +kubebuilder:metadata:labels="gateway.networking.k8s.io/policy=Inherited"
// +kubebuilder:printcolumn:name="Target Kind",type="string",JSONPath=".spec.targetRefs[0].kind",description="Kind of the first target"
// +kubebuilder:printcolumn:name="Target Name",type="string",JSONPath=".spec.targetRefs[0].name",description="Name of the first target"
// +kubebuilder:printcolumn:name="Disabled",type="boolean",JSONPath=".spec.disabled",description="Processing switched off for the targets"
// +kubebuilder:printcolumn:name="Accepted",type="string",JSONPath=`.status.ancestors[0].conditions[?(@.type=="Accepted")].status`,description="Accepted by the first ancestor"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type ExtProcPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`

	// Spec is the external processing of the targets.
	//
	// +required
	Spec ExtProcPolicySpec `json:"spec"`

	// Status says, per target (status.ancestors[].ancestorRef), whether the
	// policy is in force there (Accepted) or another policy won (Conflicted).
	//
	// +optional
	Status gwapiv1.PolicyStatus `json:"status,omitzero"`
}

// ExtProcPolicySpec is the external processing of the policy's targets: a
// processor, or the opt-out (disabled: true and no processor).
//
// The settings are given once: at the top of spec (the defaults, as
// before defaults and overrides existed), in defaults, or in overrides.
//
// +kubebuilder:validation:XValidation:message="processor is required unless disabled is true",rule="has(self.defaults) || has(self.overrides) || (has(self.disabled) && self.disabled) || has(self.processor)"
// +kubebuilder:validation:XValidation:message="processor.grpcService.extensionRef is required",rule="!has(self.processor) || (has(self.processor.grpcService) && has(self.processor.grpcService.extensionRef))"
// +kubebuilder:validation:XValidation:message="disabled: true switches processing off and takes no processor",rule="!(has(self.disabled) && self.disabled) || !has(self.processor)"
// +kubebuilder:validation:XValidation:message="the settings are given once: at the top of spec, in defaults or in overrides",rule="[has(self.defaults), has(self.overrides), has(self.processor) || (has(self.disabled) && self.disabled)].filter(x, x).size() <= 1"
type ExtProcPolicySpec struct {
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

	// Processor is the external processing filter of the targets, as an
	// HTTPProxy's extProc.processor: its gRPC service (grpcService.extensionRef
	// is required), processing mode, mutation rules and mode override.
	// Required unless disabled is true.
	//
	// +optional
	Processor *contourv1.ExtProc `json:"processor,omitempty"`

	// Disabled switches external processing off for the targets: no
	// processor of a less specific policy and not the global processing of
	// the control plane's configuration. It stands alone: a policy with
	// disabled: true names no processor.
	//
	// +optional
	Disabled bool `json:"disabled,omitempty"`

	// Defaults are the policy's settings as defaults (GEP-713): a policy
	// attached to a more specific target replaces them. The settings at
	// the top of spec are defaults too.
	//
	// +optional
	Defaults *ExtProcPolicySettings `json:"defaults,omitempty"`

	// Overrides are the policy's settings as overrides (GEP-713): no
	// policy attached to a more specific target replaces them or switches
	// them off. Of two policies with overrides, the one of the less
	// specific target wins.
	//
	// +optional
	Overrides *ExtProcPolicySettings `json:"overrides,omitempty"`
}

// ExtProcPolicySettings are the settings of an ExtProcPolicy's defaults
// or overrides: the fields of the same names at the top of its spec.
//
// +kubebuilder:validation:XValidation:message="processor is required unless disabled is true",rule="(has(self.disabled) && self.disabled) || has(self.processor)"
// +kubebuilder:validation:XValidation:message="processor.grpcService.extensionRef is required",rule="!has(self.processor) || (has(self.processor.grpcService) && has(self.processor.grpcService.extensionRef))"
// +kubebuilder:validation:XValidation:message="disabled: true switches processing off and takes no processor",rule="!(has(self.disabled) && self.disabled) || !has(self.processor)"
type ExtProcPolicySettings struct {
	// Processor is the external processing filter of the targets, as the
	// spec's.
	//
	// +optional
	Processor *contourv1.ExtProc `json:"processor,omitempty"`

	// Disabled switches external processing off for the targets.
	//
	// +optional
	Disabled bool `json:"disabled,omitempty"`
}

// Settings are the policy's settings, from overrides (override true),
// defaults, or the top of spec (defaults too).
func (s *ExtProcPolicySpec) Settings() (settings ExtProcPolicySettings, override bool) {
	switch {
	case s.Overrides != nil:
		return *s.Overrides, true
	case s.Defaults != nil:
		return *s.Defaults, false
	}
	return ExtProcPolicySettings{Processor: s.Processor, Disabled: s.Disabled}, false
}

// ExternalProcessor returns the policy's settings as an HTTPProxy's
// extProc (a copy), for code that serves both.
func (s *ExtProcPolicySpec) ExternalProcessor() *contourv1.ExternalProcessor {
	settings, _ := s.Settings()
	return &contourv1.ExternalProcessor{Processor: settings.Processor.DeepCopy(), Disabled: settings.Disabled}
}

// ExtProcPolicyList is a list of ExtProcPolicies.
//
// +kubebuilder:object:root=true
type ExtProcPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`
	Items           []ExtProcPolicy `json:"items"`
}
