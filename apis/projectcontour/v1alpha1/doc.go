// Package v1alpha1 holds the projectcontour.io/v1alpha1 API: ExtensionService.
//
// +kubebuilder:object:generate=true
// +groupName=projectcontour.io
package v1alpha1
