package status

// Reasons of the conditions and sub-conditions of the projectcontour.io
// kinds (HTTPProxy, TLSCertificateDelegation, ExtensionService): every
// reason the builder writes is one of these, so that the set a user can
// see (and alert on) is in one place. The reasons of the Valid and Ready
// conditions themselves are beside them in status.go.
const (
	ReasonAuthBadResourceKind                   = "AuthBadResourceKind"
	ReasonAuthBadResourceVersion                = "AuthBadResourceVersion"
	ReasonAuthContextNotSupported               = "AuthContextNotSupported"
	ReasonAuthHTTPSettingsInvalid               = "AuthHTTPSettingsInvalid"
	ReasonAuthNotPermitted                      = "AuthNotPermitted"
	ReasonAuthPermitInsecureNotDisabled         = "AuthPermitInsecureNotDisabled"
	ReasonAuthResponseTimeoutInvalid            = "AuthResponseTimeoutInvalid"
	ReasonClientValidationInvalid               = "ClientValidationInvalid"
	ReasonDelegationNotPermitted                = "DelegationNotPermitted"
	ReasonDirectResponsePolicyInvalid           = "DirectResponsePolicyInvalid"
	ReasonDuplicateMatchConditions              = "DuplicateMatchConditions"
	ReasonDuplicateVhost                        = "DuplicateVhost"
	ReasonExtProcExtensionServiceUnavailable    = "ExtProcExtensionServiceUnavailable"
	ReasonExtProcIncompatibleWithFallback       = "ExtProcIncompatibleWithFallback"
	ReasonExtProcInvalid                        = "ExtProcInvalid"
	ReasonExtProcNotPermitted                   = "ExtProcNotPermitted"
	ReasonExtProcOverridesInvalid               = "ExtProcOverridesInvalid"
	ReasonExtProcOverridesWithoutProcessor      = "ExtProcOverridesWithoutProcessor"
	ReasonExtProcServiceNotPermitted            = "ExtProcServiceNotPermitted"
	ReasonExtensionServiceNotFound              = "ExtensionServiceNotFound"
	ReasonExtensionServiceRefRequired           = "ExtensionServiceRefRequired"
	ReasonNoGlobalAuthorization                 = "NoGlobalAuthorization"
	ReasonFQDNInvalid                           = "FQDNInvalid"
	ReasonFQDNNotSpecified                      = "FQDNNotSpecified"
	ReasonFallbackNotValid                      = "FallbackNotValid"
	ReasonFallbackNotPresent                    = "FallbackNotPresent"
	ReasonFallbackNotDelegated                  = "FallbackNotDelegated"
	ReasonGlobalExtAuthUnavailable              = "GlobalExtAuthUnavailable"
	ReasonGlobalExtProcUnavailable              = "GlobalExtProcUnavailable"
	ReasonHeaderMatchConditionsNotValid         = "HeaderMatchConditionsNotValid"
	ReasonIncludeCreatesCycle                   = "IncludeCreatesCycle"
	ReasonIncludeNotFound                       = "IncludeNotFound"
	ReasonIncludedProxyInvalid                  = "IncludedProxyInvalid"
	ReasonInvalidExternalName                   = "InvalidExternalName"
	ReasonHealthCheckPolicyInvalid              = "HealthCheckPolicyInvalid"
	ReasonInvalidLoadBalancerPolicy             = "InvalidLoadBalancerPolicy"
	ReasonNoDelegations                         = "NoDelegations"
	ReasonNoEndpoints                           = "NoEndpoints"
	ReasonNoServicesPresent                     = "NoServicesPresent"
	ReasonPathMatchConditionsNotValid           = "PathMatchConditionsNotValid"
	ReasonPathRewritePolicyInvalid              = "PathRewritePolicyInvalid"
	ReasonQueryParameterMatchConditionsNotValid = "QueryParameterMatchConditionsNotValid"
	ReasonRequestHeadersPolicyInvalid           = "RequestHeadersPolicyInvalid"
	ReasonRequestRedirectPolicy                 = "RequestRedirectPolicy" // Contour's spelling
	ReasonResponseHeadersPolicyInvalid          = "ResponseHeadersPolicyInvalid"
	ReasonRootIncludesRoot                      = "RootIncludesRoot"
	ReasonRootProxyNotAllowedInNamespace        = "RootProxyNotAllowedInNamespace"
	ReasonRouteActionsConflict                  = "RouteActionsConflict" // ours: a proxying setting beside a redirect or direct response
	ReasonRouteActionCountNotValid              = "RouteActionCountNotValid"
	ReasonSecretNotValid                        = "SecretNotValid"
	ReasonSecretNameRequired                    = "SecretNameRequired"
	ReasonSecretNotFound                        = "SecretNotFound"
	ReasonServicePortInvalid                    = "ServicePortInvalid"
	ReasonServiceUnresolvedReference            = "ServiceUnresolvedReference"
	ReasonServiceWeightInvalid                  = "ServiceWeightInvalid"
	ReasonTLSIncompatibleFeatures               = "TLSIncompatibleFeatures"
	ReasonTLSConfigNotValid                     = "TLSConfigNotValid"
	ReasonTLSMustBeConfigured                   = "TLSMustBeConfigured"
	ReasonNothingDefined                        = "NothingDefined"
	ReasonNoServicesAndInclude                  = "NoServicesAndInclude"
	ReasonIgnoredField                          = "IgnoredField"
	// ReasonResponseHeaderPolicyInvalid: a route's responseHeadersPolicy,
	// spelt as Contour does (a service's is ResponseHeadersPolicyInvalid).
	ReasonResponseHeaderPolicyInvalid         = "ResponseHeaderPolicyInvalid"
	ReasonTCPProxyNotValid                    = "TCPProxyNotValid"
	ReasonTLSUpstreamValidation               = "TLSUpstreamValidation"
	ReasonTLSWithoutValidation                = "TLSWithoutValidation"
	ReasonTargetNamespaceInvalid              = "TargetNamespaceInvalid"
	ReasonTargetNamespacesRequired            = "TargetNamespacesRequired"
	ReasonTimeoutPolicyNotValid               = "TimeoutPolicyNotValid"
	ReasonInconsistentProtocol                = "InconsistentProtocol"
	ReasonUnsupportedProtocol                 = "UnsupportedProtocol"
	ReasonWildCardNotAllowed                  = "WildCardNotAllowed"
	ReasonInternalRedirectPolicyNotValid      = "InternalRedirectPolicyNotValid"
	ReasonMirrorNotValid                      = "MirrorNotValid"
	ReasonOnlyOneMirror                       = "OnlyOneMirror"
	ReasonRetryPolicyNotValid                 = "RetryPolicyNotValid"
	ReasonSlowStartInvalid                    = "SlowStartInvalid"
	ReasonCookieRewritePoliciesInvalid        = "CookieRewritePoliciesInvalid"
	ReasonIncompatibleIPAddressFilters        = "IncompatibleIPAddressFilters"
	ReasonIPFilterPolicyNotValid              = "IPFilterPolicyNotValid"
	ReasonInvalidCIDR                         = "InvalidCIDR"
	ReasonPolicyDidNotParse                   = "PolicyDidNotParse" // a corsPolicy (Contour's reason)
	ReasonRateLimitPolicyNotValid             = "RateLimitPolicyNotValid"
	ReasonRateLimitServiceUnavailable         = "RateLimitServiceUnavailable"
	ReasonJWTVerificationNotPermitted         = "JWTVerificationNotPermitted"
	ReasonDuplicateProviderName               = "DuplicateProviderName"
	ReasonMultipleDefaultProvidersSpecified   = "MultipleDefaultProvidersSpecified"
	ReasonRemoteJWKSPortInvalid               = "RemoteJWKSPortInvalid"
	ReasonRemoteJWKSURIInvalid                = "RemoteJWKSURIInvalid"
	ReasonRemoteJWKSSchemeInvalid             = "RemoteJWKSSchemeInvalid"
	ReasonRemoteJWKSUpstreamValidationInvalid = "RemoteJWKSUpstreamValidationInvalid"
	ReasonRemoteJWKSCACertificateNotDelegated = "RemoteJWKSCACertificateNotDelegated"
	ReasonCACertificateNotDelegated           = "CACertificateNotDelegated"
	ReasonRemoteJWKSTimeoutInvalid            = "RemoteJWKSTimeoutInvalid"
	ReasonRemoteJWKSCacheDurationInvalid      = "RemoteJWKSCacheDurationInvalid"
	ReasonRemoteJWKSDNSLookupFamilyInvalid    = "RemoteJWKSDNSLookupFamilyInvalid"
	ReasonInvalidJWTVerificationPolicy        = "InvalidJWTVerificationPolicy"
	ReasonJWTProviderNotDefined               = "JWTProviderNotDefined"
)

// Reasons of the errors about an object's fields (type SpecError), for
// every kind. The object is not served: a field the control plane cannot
// read or apply might be one that restricts access.
const (
	// ReasonUnknownField: a field the API does not have (a misspelling).
	ReasonUnknownField = "UnknownField"
	// ReasonDuplicateField: a field given twice; only one value would be
	// read.
	ReasonDuplicateField = "DuplicateField"
	// ReasonUnsupportedField: a field of the API that portcullis does not
	// implement (internal/fields); ignored, it would fail open.
	ReasonUnsupportedField = "UnsupportedField"
	// ReasonCRDValidationFailed: a Gateway API object read from a file
	// that its CRD's validation (schema, CEL rules) refuses: the API
	// server would not store it.
	ReasonCRDValidationFailed = "CRDValidationFailed"
)

// Reasons of errors that are Portcullis's own rather than Contour's.
const (
	// ReasonIncludeLimitExceeded: a root's includes expand past one of
	// the configuration file's limits; the root is not served.
	ReasonIncludeLimitExceeded = "IncludeLimitExceeded"
	// ReasonServiceAnnotationNotSupported: a Service a route uses has an
	// annotation of Contour's namespace (projectcontour.io/) that
	// Portcullis does not implement; the service is not used (an HTTPProxy
	// route answers 503, a Gateway API backend is not resolved) rather
	// than served otherwise than the annotation says.
	ReasonServiceAnnotationNotSupported = "ServiceAnnotationNotSupported"
	// ReasonServiceAnnotationInvalid: a Service annotation Portcullis
	// implements has a value it cannot read (not a number, a port the
	// Service does not have, a port named by two protocols or against its
	// appProtocol); the service is not used.
	ReasonServiceAnnotationInvalid = "ServiceAnnotationInvalid"
	// ReasonTracingUnavailable: the configuration file's tracing names an
	// ExtensionService that is missing or invalid; Envoy's spans are
	// dropped until it is fixed. Not a condition of any object: the
	// control plane logs it and exports it as a metric.
	ReasonTracingUnavailable = "TracingUnavailable"
)

// Reasons of Gateway API conditions that the API does not list (the
// others are the Gateway API module's constants, gwapiv1.*Reason*).
const (
	// ReasonGatewayClassNotAccepted: a Gateway's (our) GatewayClass is
	// not accepted; the Gateway is not served.
	ReasonGatewayClassNotAccepted = "GatewayClassNotAccepted"
)

// The refusals of an opt-out of authorization: by the configuration
// file (globalExtAuth.optOut: forbidden), a warning sub-condition of an
// HTTPProxy (type AuthError) and the Accepted reason of a Gateway API
// policy's ancestor; by a less specific policy's overrides (GEP-713), the
// Overridden condition of a Gateway API policy's ancestor.
const (
	// ReasonOptOutForbidden: the object switches the global
	// authorization off, and the configuration file forbids it; its
	// routes stay authorized.
	ReasonOptOutForbidden = "OptOutForbidden"
	// TypePolicyOverridden: a policy's routes at this ancestor get a less
	// specific target's policy instead, whose settings are overrides.
	TypePolicyOverridden = "Overridden"
	// ReasonOverriddenByPolicy: the Overridden condition's reason.
	ReasonOverriddenByPolicy = "OverriddenByPolicy"
)

// Envoy's rejection of an object's configuration (an ADS NACK), a
// sub-condition of the objects it is attributed to.
const (
	TypeEnvoyRejected     = "EnvoyRejected"
	ReasonRejectedByEnvoy = "RejectedByEnvoy"
)

// A failed call of the extension server's hooks (internal/extension), a
// sub-condition of the objects the resource it concerned came from: an
// error under the registration's failurePolicy Closed (the last good
// configuration stays published), a warning under Open (the resource is
// served without the hook's change). Recomputed on every rebuild: it goes
// with the next good call.
const (
	TypeExtensionError        = "ExtensionError"
	ReasonExtensionHookFailed = "ExtensionHookFailed"
)
