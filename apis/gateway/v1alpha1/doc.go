// Package v1alpha1 holds the gateway.portcullis.dev/v1alpha1 API: the
// Gateway API policies of Portcullis, ExtAuthPolicy (external
// authorization) and ExtProcPolicy (external processing). Both follow the
// Gateway API's policy attachment: spec.targetRefs names Gateways (or one
// of their listeners) and HTTPRoutes or GRPCRoutes (or one of their rules)
// in the policy's namespace, and status.ancestors says, per target, whether
// the policy is in force there.
//
// The settings are those of an HTTPProxy's authorization and extProc, with
// the projectcontour.io/v1 types, so that both front doors validate and
// document them the same way.
//
// +kubebuilder:object:generate=true
// +groupName=gateway.portcullis.dev
package v1alpha1
