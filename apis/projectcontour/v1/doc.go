// Package v1 holds the projectcontour.io/v1 API: HTTPProxy and
// TLSCertificateDelegation.
//
// +kubebuilder:object:generate=true
// +groupName=projectcontour.io
package v1
