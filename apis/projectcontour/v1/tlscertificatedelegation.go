package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TLSCertificateDelegationSpec defines the spec of the CRD
type TLSCertificateDelegationSpec struct {
	// +required
	Delegations []CertificateDelegation `json:"delegations"`
}

// CertificateDelegation maps the authority to reference a secret
// in the current namespace to a set of namespaces.
type CertificateDelegation struct {
	// required, the name of a secret in the current namespace.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	SecretName string `json:"secretName"`

	// required, the namespaces the authority to reference the
	// secret will be delegated to.
	// If TargetNamespaces is nil or empty, the CertificateDelegation'
	// is ignored. If the TargetNamespace list contains the character, "*"
	// the secret will be delegated to all namespaces.
	//
	// +required
	TargetNamespaces []string `json:"targetNamespaces"`
}

// TLSCertificateDelegationStatus allows for the status of the delegation
// to be presented to the user.
type TLSCertificateDelegationStatus struct {
	// Conditions contains information about the current status of the TLSCertificateDelegation.
	//
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []DetailedCondition `json:"conditions,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,path=tlscertificatedelegations,singular=tlscertificatedelegation,shortName=tlscerts
// +kubebuilder:subresource:status

// TLSCertificateDelegation is an TLS Certificate Delegation CRD specification.
// See docs/design/security.md (cross-namespace Secrets) for details.
type TLSCertificateDelegation struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`

	Spec TLSCertificateDelegationSpec `json:"spec"`

	// +optional
	Status TLSCertificateDelegationStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// TLSCertificateDelegationList is a list of TLSCertificateDelegations.
type TLSCertificateDelegationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`
	Items           []TLSCertificateDelegation `json:"items"`
}
