package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// HTTPProxySpec defines the spec of the CRD.
type HTTPProxySpec struct {
	// Virtualhost appears at most once. If it is present, the object is considered
	// to be a "root" HTTPProxy.
	//
	// +optional
	VirtualHost *VirtualHost `json:"virtualhost,omitempty"`

	// Routes are the ingress routes. If TCPProxy is present, Routes is ignored.
	//
	// +optional
	Routes []Route `json:"routes,omitempty"`

	// TCPProxy proxies TCP connections (after TLS termination or with TLS
	// passthrough) instead of HTTP requests.
	//
	// +optional
	TCPProxy *TCPProxy `json:"tcpproxy,omitempty"`

	// Includes allow for specific routing configuration to be included from another HTTPProxy,
	// possibly in another namespace.
	//
	// +optional
	Includes []Include `json:"includes,omitempty"`

	// IngressClassName optionally specifies the ingress class to use for this
	// HTTPProxy. This replaces the deprecated `kubernetes.io/ingress.class`
	// annotation. For backwards compatibility, when that annotation is set, it
	// is given precedence over this field.
	//
	// +optional
	IngressClassName string `json:"ingressClassName,omitempty"`
}

// Include describes a set of policies that can be applied to an HTTPProxy in a namespace.
type Include struct {
	// Name of the HTTPProxy
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`

	// Namespace of the HTTPProxy to include. Defaults to the current namespace if not supplied.
	//
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// Conditions are a set of rules that are applied to included HTTPProxies.
	// In effect, they are added onto the Conditions of included HTTPProxy Route
	// structs.
	// When applied, they are merged using AND, with one exception:
	// There can be only one Prefix MatchCondition per Conditions slice.
	// More than one Prefix, or contradictory Conditions, will make the
	// include invalid. Exact is not allowed in Conditions.
	//
	// +optional
	Conditions []MatchCondition `json:"conditions,omitempty"`
}

// MatchCondition are a general holder for matching rules for HTTPProxies.
// One of Prefix, Exact, Regex, Header or QueryParameter must be provided.
type MatchCondition struct {
	// Prefix defines a prefix match for a request.
	//
	// +optional
	Prefix string `json:"prefix,omitempty"`

	// Exact defines a exact match for a request.
	// This field is not allowed in include match conditions.
	//
	// +optional
	Exact string `json:"exact,omitempty"`

	// Regex matches the request path against a regular expression.
	// Not allowed in include conditions.
	//
	// +optional
	Regex string `json:"regex,omitempty"`

	// Header specifies the header condition to match.
	//
	// +optional
	Header *HeaderMatchCondition `json:"header,omitempty"`

	// QueryParameter matches a query parameter of the request.
	//
	// +optional
	QueryParameter *QueryParameterMatchCondition `json:"queryParameter,omitempty"`
}

// HeaderMatchCondition specifies how to conditionally match against HTTP
// headers. The Name field is required, only one of Present, NotPresent,
// Contains, NotContains, Exact, NotExact and Regex should be set.
type HeaderMatchCondition struct {
	// Name is the name of the header to match against. Name is required.
	// Header names are case insensitive.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`

	// Present specifies that condition is true when the named header
	// is present, regardless of its value. Note that setting Present
	// to false does not make the condition true if the named header
	// is absent.
	//
	// +optional
	Present bool `json:"present,omitempty"`

	// NotPresent specifies that condition is true when the named header
	// is not present. Note that setting NotPresent to false does not
	// make the condition true if the named header is present.
	//
	// +optional
	NotPresent bool `json:"notpresent,omitempty"`

	// Contains specifies a substring that must be present in
	// the header value.
	//
	// +optional
	Contains string `json:"contains,omitempty"`

	// NotContains specifies a substring that must not be present
	// in the header value.
	//
	// +optional
	NotContains string `json:"notcontains,omitempty"`

	// IgnoreCase makes the string comparisons case insensitive (not Regex).
	//
	// +optional
	IgnoreCase bool `json:"ignoreCase,omitempty"`

	// Exact specifies a string that the header value must be equal to.
	//
	// +optional
	Exact string `json:"exact,omitempty"`

	// NotExact specifies a string that the header value must not be
	// equal to. The condition is true if the header has any other value.
	//
	// +optional
	NotExact string `json:"notexact,omitempty"`

	// Regex is a regular expression the header value must match.
	//
	// +optional
	Regex string `json:"regex,omitempty"`

	// TreatMissingAsEmpty makes a negative match (NotContains, NotExact)
	// treat an absent header as an empty value.
	//
	// +optional
	TreatMissingAsEmpty bool `json:"treatMissingAsEmpty,omitempty"`
}

// QueryParameterMatchCondition matches a query parameter by name; at most
// one of Exact, Prefix, Suffix, Regex, Contains and Present may be set.
type QueryParameterMatchCondition struct {
	// Name of the query parameter.
	//
	// +required
	Name string `json:"name"`

	// Exact is the value the parameter must equal.
	//
	// +optional
	Exact string `json:"exact,omitempty"`

	// Prefix is the value the parameter must start with.
	//
	// +optional
	Prefix string `json:"prefix,omitempty"`

	// Suffix is the value the parameter must end with.
	//
	// +optional
	Suffix string `json:"suffix,omitempty"`

	// Regex is a regular expression the value must match.
	//
	// +optional
	Regex string `json:"regex,omitempty"`

	// Contains is a substring the value must contain.
	//
	// +optional
	Contains string `json:"contains,omitempty"`

	// IgnoreCase makes the string comparisons case insensitive (not Regex).
	//
	// +optional
	IgnoreCase bool `json:"ignoreCase,omitempty"`

	// Present matches when the parameter is present, whatever its value.
	//
	// +optional
	Present bool `json:"present,omitempty"`
}

// VirtualHost appears at most once. If it is present, the object is considered
// to be a "root".
type VirtualHost struct {
	// The fully qualified domain name of the root of the ingress tree
	// all leaves of the DAG rooted at this object relate to the fqdn.
	// A wildcard "*.example.com" (the whole first label) serves the names
	// with exactly one label in its place (a.example.com, not
	// b.a.example.com nor example.com); an exact fqdn takes precedence.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern="^(\\*\\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
	Fqdn string `json:"fqdn"`

	// If present the fields describes TLS properties of the virtual
	// host. The SNI names that will be matched on are described in fqdn,
	// the tls.secretName secret must contain a certificate that itself
	// contains a name that matches the FQDN.
	//
	// +optional
	TLS *TLS `json:"tls,omitempty"`

	// This field configures an extension service to perform
	// authorization for this virtual host. Authorization can
	// only be configured on virtual hosts that have TLS enabled.
	// If the TLS configuration requires client certificate
	// validation, the client certificate is always included in the
	// authentication check request.
	//
	// +optional
	Authorization *AuthorizationServer `json:"authorization,omitempty"`

	// ExtProc which allow to act on HTTP traffic in a flexible way
	// and the policy for fine-grained at VirtualHost level.
	//
	// +optional
	ExtProc *ExternalProcessor `json:"extProc,omitempty"`

	// CORSPolicy is the cross-origin resource sharing policy of the host.
	//
	// +optional
	CORSPolicy *CORSPolicy `json:"corsPolicy,omitempty"`

	// RateLimitPolicy rate limits the requests to the host.
	//
	// +optional
	RateLimitPolicy *RateLimitPolicy `json:"rateLimitPolicy,omitempty"`

	// JWTProviders verify JSON Web Tokens on the host's requests.
	//
	// +optional
	JWTProviders []JWTProvider `json:"jwtProviders,omitempty"`

	// IPAllowFilterPolicy allows only the requests whose address matches
	// one of the rules. Exclusive with IPDenyFilterPolicy; routes may
	// override it.
	//
	// +optional
	IPAllowFilterPolicy []IPFilterPolicy `json:"ipAllowPolicy,omitempty"`

	// IPDenyFilterPolicy denies the requests whose address matches one of
	// the rules. Exclusive with IPAllowFilterPolicy; routes may override it.
	//
	// +optional
	IPDenyFilterPolicy []IPFilterPolicy `json:"ipDenyPolicy,omitempty"`
}

// TLS describes tls properties. The SNI names that will be matched on
// are described in the HTTPProxy's Spec.VirtualHost.Fqdn field.
type TLS struct {
	// SecretName is the name of a TLS secret.
	// Either SecretName or Passthrough must be specified, but not both.
	// If specified, the named secret must contain a matching certificate
	// for the virtual host's FQDN.
	// The name can be optionally prefixed with namespace "namespace/name".
	// When cross-namespace reference is used, TLSCertificateDelegation resource must exist in the namespace to grant access to the secret.
	//
	// +optional
	SecretName string `json:"secretName,omitempty"`

	// MinimumProtocolVersion is the minimum TLS version this vhost should
	// negotiate. Valid options are `1.2` (default) and `1.3`. Any other value
	// defaults to TLS 1.2.
	//
	// +optional
	// +kubebuilder:validation:Enum="";"1.2";"1.3"
	MinimumProtocolVersion string `json:"minimumProtocolVersion,omitempty"`

	// MaximumProtocolVersion is the maximum TLS version this vhost should
	// negotiate. Valid options are `1.2` and `1.3` (default). Any other value
	// defaults to TLS 1.3.
	//
	// +optional
	// +kubebuilder:validation:Enum="";"1.2";"1.3"
	MaximumProtocolVersion string `json:"maximumProtocolVersion,omitempty"`

	// EnableFallbackCertificate defines if the vhost should allow a default certificate to
	// be applied which handles all requests which don't match the SNI defined in this vhost.
	//
	// +optional
	EnableFallbackCertificate bool `json:"enableFallbackCertificate,omitempty"`

	// Passthrough hands the TLS connection, still encrypted, to the
	// backend (spec.tcpproxy). Exclusive with SecretName.
	//
	// +optional
	Passthrough bool `json:"passthrough,omitempty"`

	// ClientValidation defines how to verify the client certificate
	// when an external client establishes a TLS connection to Envoy.
	//
	// This setting:
	//
	// 1. Enables TLS client certificate validation.
	// 2. Specifies how the client certificate will be validated (i.e.
	//    validation required or skipped).
	//
	// Note: Setting client certificate validation to be skipped should
	// be only used in conjunction with an external authorization server that
	// performs client validation as Contour will ensure client certificates
	// are passed along.
	//
	// +optional
	ClientValidation *DownstreamValidation `json:"clientValidation,omitempty"`
}

// DownstreamValidation defines how to verify the client certificate.
type DownstreamValidation struct {
	// Name of a Kubernetes secret that contains a CA certificate bundle.
	// The secret must contain key named ca.crt.
	// The client certificate must validate against the certificates in the bundle.
	// If specified and SkipClientCertValidation is true, client certificates will
	// be required on requests.
	// The name can be optionally prefixed with namespace "namespace/name".
	// When cross-namespace reference is used, TLSCertificateDelegation resource must exist in the namespace to grant access to the secret.
	//
	// +optional
	// +kubebuilder:validation:MinLength=1
	CACertificate string `json:"caSecret,omitempty"`

	// SkipClientCertValidation disables downstream client certificate
	// validation. Defaults to false. This field is intended to be used in
	// conjunction with external authorization in order to enable the external
	// authorization server to validate client certificates. When this field
	// is set to true, client certificates are requested but not verified by
	// Envoy. If CACertificate is specified, client certificates are required on
	// requests, but not verified. If external authorization is in use, they are
	// presented to the external authorization server.
	//
	// +optional
	SkipClientCertValidation bool `json:"skipClientCertValidation,omitempty"`

	// ForwardClientCertificate selects the parts of the client certificate
	// sent upstream in the x-forwarded-client-cert header.
	//
	// +optional
	ForwardClientCertificate *ClientCertificateDetails `json:"forwardClientCertificate,omitempty"`

	// CertificateRevocationList names a Secret (optionally "namespace/name",
	// which needs a TLSCertificateDelegation) whose crl.pem key holds the
	// PEM CRLs that client certificates are checked against.
	//
	// +optional
	// +kubebuilder:validation:MinLength=1
	CertificateRevocationList string `json:"crlSecret,omitempty"`

	// OnlyVerifyLeafCertCrl checks only the leaf certificate against the CRLs.
	//
	// +optional
	OnlyVerifyLeafCertCrl bool `json:"crlOnlyVerifyLeafCert,omitempty"`

	// OptionalClientCertificate when set to true will request a client certificate
	// but allow the connection to continue if the client does not provide one.
	// If a client certificate is sent, it will be verified according to the
	// other properties, which includes disabling validation if
	// SkipClientCertValidation is set. Defaults to false.
	//
	// +optional
	OptionalClientCertificate bool `json:"optionalClientCertificate,omitempty"`
}

// ClientCertificateDetails selects the parts of a client certificate to
// forward.
type ClientCertificateDetails struct {
	// Subject of the certificate.
	//
	// +optional
	Subject bool `json:"subject,omitempty"`

	// Cert is the certificate, URL-encoded PEM.
	//
	// +optional
	Cert bool `json:"cert,omitempty"`

	// Chain is the whole chain (leaf included), URL-encoded PEM.
	//
	// +optional
	Chain bool `json:"chain,omitempty"`

	// DNS are the DNS subject alternative names.
	//
	// +optional
	DNS bool `json:"dns,omitempty"`

	// URI is the URI subject alternative name.
	//
	// +optional
	URI bool `json:"uri,omitempty"`
}

// AuthorizationServiceType is the protocol an external authorization
// server implements.
//
// +kubebuilder:validation:Enum=grpc;http
type AuthorizationServiceType string

const (
	// AuthorizationGRPCService is Envoy's v3 external authorization gRPC
	// protocol (the default).
	AuthorizationGRPCService AuthorizationServiceType = "grpc"
	// AuthorizationHTTPService is the raw HTTP protocol: Envoy sends the
	// request's headers to the server, a 200 answer allows it, any other
	// is returned to the client.
	AuthorizationHTTPService AuthorizationServiceType = "http"
)

// AuthorizationServer configures an external server to authenticate
// client requests. The external server implements the v3 Envoy
// external authorization GRPC protocol (https://www.envoyproxy.io/docs/envoy/latest/api-v3/service/auth/v3/external_auth.proto),
// or, with serviceType http, the HTTP flavour of it.
type AuthorizationServer struct {
	// ExtensionServiceRef specifies the extension resource that will authorize client requests.
	// It may be left empty when only GlobalExternalAuthorizationDisabled is set.
	//
	// +optional
	ExtensionServiceRef ExtensionServiceReference `json:"extensionRef,omitzero"`

	// ServiceType is the protocol of the authorization server: grpc (the
	// default) or http.
	//
	// +optional
	ServiceType AuthorizationServiceType `json:"serviceType,omitempty"`

	// HTTPServerSettings configures the requests to an HTTP authorization
	// server; only with serviceType http.
	//
	// +optional
	HTTPServerSettings *HTTPAuthorizationServerSettings `json:"httpSettings,omitempty"`

	// AuthPolicy sets a default authorization policy for client requests.
	// This policy will be used unless overridden by individual routes.
	//
	// +optional
	AuthPolicy *AuthorizationPolicy `json:"authPolicy,omitempty"`

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
	// from internal authorization to Contour external authorization.
	//
	// +optional
	FailOpen bool `json:"failOpen,omitempty"`

	// WithRequestBody specifies configuration for sending the client request's body to authorization server.
	//
	// +optional
	WithRequestBody *AuthorizationServerBufferSettings `json:"withRequestBody,omitempty"`

	// GlobalExternalAuthorizationDisabled disables the global external authorization
	// (configured in the control plane's configuration) for this virtual host.
	//
	// +optional
	GlobalExternalAuthorizationDisabled bool `json:"globalExtAuthDisabled,omitempty"`
}

// HTTPAuthorizationServerSettings configures the requests Envoy sends to
// an HTTP authorization server and what it keeps of its answers.
type HTTPAuthorizationServerSettings struct {
	// PathPrefix is prepended to the client request's path in the check
	// request (e.g. "/auth" checks /app/x as /auth/app/x).
	//
	// +optional
	PathPrefix string `json:"pathPrefix,omitempty"`

	// AllowedAuthorizationHeaders are the client request headers sent to
	// the server, besides those Envoy always sends (Host, Method, Path,
	// Content-Length and Authorization).
	//
	// +optional
	AllowedAuthorizationHeaders []HTTPAuthorizationServerAllowedHeaders `json:"allowedAuthorizationHeaders,omitempty"`

	// AllowedUpstreamHeaders are the headers of an allowing answer that
	// are added to (or replace those of) the request sent upstream.
	//
	// +optional
	AllowedUpstreamHeaders []HTTPAuthorizationServerAllowedHeaders `json:"allowedUpstreamHeaders,omitempty"`
}

// HTTPAuthorizationServerAllowedHeaders matches header names: exactly one
// of exact, prefix, suffix and contains.
type HTTPAuthorizationServerAllowedHeaders struct {
	// Exact matches the whole name.
	//
	// +optional
	Exact string `json:"exact,omitempty"`

	// Prefix matches the beginning of the name.
	//
	// +optional
	Prefix string `json:"prefix,omitempty"`

	// Suffix matches the end of the name.
	//
	// +optional
	Suffix string `json:"suffix,omitempty"`

	// Contains matches a part of the name.
	//
	// +optional
	Contains string `json:"contains,omitempty"`

	// IgnoreCase matches regardless of case.
	//
	// +optional
	IgnoreCase bool `json:"ignoreCase,omitempty"`
}

// ExtensionServiceReference names an ExtensionService resource.
type ExtensionServiceReference struct {
	// API version of the referent.
	// If this field is not specified, the default "projectcontour.io/v1alpha1" will be used
	//
	// +optional
	// +kubebuilder:validation:MinLength=1
	APIVersion string `json:"apiVersion,omitempty"`

	// Kind of the referent.
	// If this field is not specified, the default "ExtensionService" will be used.
	//
	// +optional
	// +kubebuilder:validation:MinLength=1
	Kind string `json:"kind,omitempty"`

	// Namespace of the referent.
	// If this field is not specifies, the namespace of the resource that targets the referent will be used.
	//
	// More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/namespaces/
	//
	// +optional
	// +kubebuilder:validation:MinLength=1
	Namespace string `json:"namespace,omitempty"`

	// Name of the referent.
	//
	// More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names/#names
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name,omitempty"`
}

// AuthorizationPolicy modifies how client requests are authenticated.
type AuthorizationPolicy struct {
	// When true, this field disables client request authentication
	// for the scope of the policy.
	//
	// +optional
	Disabled bool `json:"disabled,omitempty"`

	// Context is a set of key/value pairs that are sent to the
	// authentication server in the check request. If a context
	// is provided at an enclosing scope, the entries are merged
	// such that the inner scope overrides matching keys from the
	// outer scope.
	//
	// +optional
	Context map[string]string `json:"context,omitempty"`
}

// AuthorizationServerBufferSettings enables ExtAuthz filter to buffer client request data and send it as part of authorization request
type AuthorizationServerBufferSettings struct {
	// MaxRequestBytes sets the maximum size of message body ExtAuthz filter will hold in-memory.
	//
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:default=1024
	MaxRequestBytes uint32 `json:"maxRequestBytes,omitempty"`

	// If AllowPartialMessage is true, then Envoy will buffer the body until MaxRequestBytes are reached.
	//
	// +optional
	AllowPartialMessage bool `json:"allowPartialMessage,omitempty"`

	// If PackAsBytes is true, the body sent to Authorization Server is in raw bytes.
	//
	// +optional
	PackAsBytes bool `json:"packAsBytes,omitempty"`
}

// Route contains the set of routes for a virtual host.
type Route struct {
	// Conditions are a set of rules that are applied to a Route.
	// When applied, they are merged using AND, with one exception:
	// There can be only one Prefix, Exact or Regex MatchCondition
	// per Conditions slice. More than one of these condition types,
	// or contradictory Conditions, will make the route invalid.
	//
	// +optional
	Conditions []MatchCondition `json:"conditions,omitempty"`

	// Services are the services to proxy traffic.
	//
	// +optional
	Services []Service `json:"services,omitempty"`

	// Allow this path to respond to insecure requests over HTTP which are normally
	// not permitted when a `virtualhost.tls` block is present.
	//
	// +optional
	PermitInsecure bool `json:"permitInsecure,omitempty"`

	// EnableWebsockets allows WebSocket upgrades on the route.
	//
	// +optional
	EnableWebsockets bool `json:"enableWebsockets,omitempty"`

	// AuthPolicy updates the authorization policy that was set
	// on the root HTTPProxy object for client requests that
	// match this route.
	//
	// +optional
	AuthPolicy *AuthorizationPolicy `json:"authPolicy,omitempty"`

	// The timeout policy for this route.
	//
	// +optional
	TimeoutPolicy *TimeoutPolicy `json:"timeoutPolicy,omitempty"`

	// RetryPolicy retries failed requests.
	//
	// +optional
	RetryPolicy *RetryPolicy `json:"retryPolicy,omitempty"`

	// HealthCheckPolicy checks the route's services actively over HTTP.
	//
	// +optional
	HealthCheckPolicy *HTTPHealthCheckPolicy `json:"healthCheckPolicy,omitempty"`

	// LoadBalancerPolicy balances requests across the services' endpoints.
	//
	// +optional
	LoadBalancerPolicy *LoadBalancerPolicy `json:"loadBalancerPolicy,omitempty"`

	// PathRewritePolicy rewrites the request path after routing.
	//
	// +optional
	PathRewritePolicy *PathRewritePolicy `json:"pathRewritePolicy,omitempty"`

	// The policy for managing request headers during proxying.
	//
	// +optional
	RequestHeadersPolicy *HeadersPolicy `json:"requestHeadersPolicy,omitempty"`

	// The policy for managing response headers during proxying.
	//
	// +optional
	ResponseHeadersPolicy *HeadersPolicy `json:"responseHeadersPolicy,omitempty"`

	// CookieRewritePolicies rewrite Set-Cookie attributes of responses;
	// cookie names must be unique in the list.
	//
	// +optional
	CookieRewritePolicies []CookieRewritePolicy `json:"cookieRewritePolicies,omitempty"`

	// RateLimitPolicy rate limits the route's requests.
	//
	// +optional
	RateLimitPolicy *RateLimitPolicy `json:"rateLimitPolicy,omitempty"`

	// RequestRedirectPolicy answers with an HTTP redirect instead of
	// proxying.
	//
	// +optional
	RequestRedirectPolicy *HTTPRequestRedirectPolicy `json:"requestRedirectPolicy,omitempty"`

	// DirectResponsePolicy answers with a fixed response instead of
	// proxying.
	//
	// +optional
	DirectResponsePolicy *HTTPDirectResponsePolicy `json:"directResponsePolicy,omitempty"`

	// InternalRedirectPolicy makes the proxy follow upstream redirects
	// itself.
	//
	// +optional
	InternalRedirectPolicy *HTTPInternalRedirectPolicy `json:"internalRedirectPolicy,omitempty"`

	// JWTVerificationPolicy chooses the JWT provider of the route, or none.
	//
	// +optional
	JWTVerificationPolicy *JWTVerificationPolicy `json:"jwtVerificationPolicy,omitempty"`

	// IPAllowFilterPolicy replaces the host's IP filter rules for the
	// route: only matching requests are allowed.
	//
	// +optional
	IPAllowFilterPolicy []IPFilterPolicy `json:"ipAllowPolicy,omitempty"`

	// IPDenyFilterPolicy replaces the host's IP filter rules for the route:
	// matching requests are denied.
	//
	// +optional
	IPDenyFilterPolicy []IPFilterPolicy `json:"ipDenyPolicy,omitempty"`

	// ExtProcPolicy updates the external processing policy that was set
	// on the root HTTPProxy object (or globally) for client requests/responses
	// that match this route.
	//
	// +optional
	ExtProcPolicy *ExtProcPolicy `json:"extProcPolicy,omitempty"`
}

// Service defines an Kubernetes Service to proxy traffic.
type Service struct {
	// Name is the name of Kubernetes service to proxy traffic.
	// Names defined here will be used to look up corresponding endpoints which contain the ips to route.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`

	// Port (defined as Integer) to proxy traffic to since a service can have multiple defined.
	//
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int `json:"port"`

	// HealthPort is the port health checks use; defaults to Port.
	//
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	HealthPort int `json:"healthPort,omitempty"`

	// Protocol may be used to specify (or override) the protocol used to reach this Service.
	// Values may be tls, h2, h2c. If omitted, protocol-selection falls back on Service annotations.
	//
	// +optional
	// +kubebuilder:validation:Enum=h2;h2c;tls
	Protocol *string `json:"protocol,omitempty"`

	// Weight defines percentage of traffic to balance traffic
	//
	// +optional
	// +kubebuilder:validation:Minimum=0
	Weight int64 `json:"weight,omitempty"`

	// UpstreamValidation defines how to verify the backend service's certificate
	//
	// +optional
	UpstreamValidation *UpstreamValidation `json:"validation,omitempty"`

	// Mirror sends the service a copy of the route's traffic (a share of it
	// when Weight is 1-100) whose responses are discarded.
	//
	// +optional
	Mirror bool `json:"mirror,omitempty"`

	// The policy for managing request headers during proxying.
	//
	// +optional
	RequestHeadersPolicy *HeadersPolicy `json:"requestHeadersPolicy,omitempty"`

	// The policy for managing response headers during proxying.
	//
	// +optional
	ResponseHeadersPolicy *HeadersPolicy `json:"responseHeadersPolicy,omitempty"`

	// CookieRewritePolicies rewrite Set-Cookie attributes of the service's
	// responses.
	//
	// +optional
	CookieRewritePolicies []CookieRewritePolicy `json:"cookieRewritePolicies,omitempty"`

	// SlowStartPolicy ramps up the traffic to newly added endpoints.
	//
	// +optional
	SlowStartPolicy *SlowStartPolicy `json:"slowStartPolicy,omitempty"`
}

// UpstreamValidation defines how to verify the backend service's certificate
//
// +kubebuilder:validation:XValidation:message="subjectNames[0] must equal subjectName if set",rule="has(self.subjectNames) ? self.subjectNames[0] == self.subjectName : true"
type UpstreamValidation struct {
	// Name or namespaced name of the Kubernetes secret used to validate the certificate presented by the backend.
	// The secret must contain key named ca.crt.
	// The name can be optionally prefixed with namespace "namespace/name".
	// When cross-namespace reference is used, TLSCertificateDelegation resource must exist in the namespace to grant access to the secret.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	CACertificate string `json:"caSecret"`

	// Key which is expected to be present in the 'subjectAltName' of the presented certificate.
	// Deprecated in favour of SubjectNames, whose first entry must equal it.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=250
	SubjectName string `json:"subjectName"`

	// SubjectNames are the accepted subject alternative names; the
	// certificate must present at least one.
	//
	// +optional
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	SubjectNames []string `json:"subjectNames,omitempty"`
}

// TimeoutPolicy configures timeouts that are used for handling network requests.
//
// TimeoutPolicy durations are expressed in the Go [Duration format](https://godoc.org/time#ParseDuration).
// Valid time units are "ns", "us" (or "µs"), "ms", "s", "m", "h".
// The string "infinity" is also a valid input and specifies no timeout.
// A value of "0s" will be treated as if the field were not set, i.e. by using Envoy's default behavior.
type TimeoutPolicy struct {
	// Timeout for receiving a response from the server after processing a request from client.
	// If not supplied, Envoy's default value of 15s applies.
	//
	// +optional
	// +kubebuilder:validation:Pattern=`^(((\d*(\.\d*)?h)|(\d*(\.\d*)?m)|(\d*(\.\d*)?s)|(\d*(\.\d*)?ms)|(\d*(\.\d*)?us)|(\d*(\.\d*)?µs)|(\d*(\.\d*)?ns))+|infinity|infinite)$`
	Response string `json:"response,omitempty"`

	// Timeout for how long the proxy should wait while there is no activity during single request/response (for HTTP/1.1) or stream (for HTTP/2).
	// Timeout will not trigger while HTTP/1.1 connection is idle between two consecutive requests.
	// If not specified, there is no per-route idle timeout, though a connection manager-wide
	// stream_idle_timeout default of 5m still applies.
	//
	// +optional
	// +kubebuilder:validation:Pattern=`^(((\d*(\.\d*)?h)|(\d*(\.\d*)?m)|(\d*(\.\d*)?s)|(\d*(\.\d*)?ms)|(\d*(\.\d*)?us)|(\d*(\.\d*)?µs)|(\d*(\.\d*)?ns))+|infinity|infinite)$`
	Idle string `json:"idle,omitempty"`

	// IdleConnection is how long an upstream connection without requests is
	// kept open. Envoy's default is 1h.
	//
	// +optional
	// +kubebuilder:validation:Pattern=`^(((\d*(\.\d*)?h)|(\d*(\.\d*)?m)|(\d*(\.\d*)?s)|(\d*(\.\d*)?ms)|(\d*(\.\d*)?us)|(\d*(\.\d*)?µs)|(\d*(\.\d*)?ns))+|infinity|infinite)$`
	IdleConnection string `json:"idleConnection,omitempty"`
}

// HeadersPolicy defines how headers are managed during forwarding.
// The `Host` header is treated specially and if set in a HTTP request
// will be used as the SNI server name when forwarding over TLS. It is an
// error to attempt to set the `Host` header in a HTTP response.
type HeadersPolicy struct {
	// Set specifies a list of HTTP header values that will be set in the HTTP header.
	// If the header does not exist it will be added, otherwise it will be overwritten with the new value.
	//
	// +optional
	Set []HeaderValue `json:"set,omitempty"`

	// Remove specifies a list of HTTP header names to remove.
	//
	// +optional
	Remove []string `json:"remove,omitempty"`
}

// HeaderValue represents a header name/value pair
type HeaderValue struct {
	// Name represents a key of a header
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`

	// Value represents the value of a header specified by a key
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	Value string `json:"value"`
}

// LoadBalancerPolicy defines the load balancing policy.
type LoadBalancerPolicy struct {
	// Strategy specifies the policy used to balance requests
	// across the pool of backend pods. Valid policy names are
	// `Random`, `RoundRobin`, `WeightedLeastRequest`, `Cookie`,
	// and `RequestHash`. If an unknown strategy name is specified
	// or no policy is supplied, the default `RoundRobin` policy
	// is used.
	//
	// +optional
	// +kubebuilder:validation:Enum=RoundRobin;WeightedLeastRequest;Random;RequestHash;Cookie
	Strategy string `json:"strategy,omitempty"`

	// RequestHashPolicies are the request attributes hashed by the
	// RequestHash strategy; invalid entries are ignored, and without a
	// valid one the strategy falls back to RoundRobin.
	//
	// +optional
	RequestHashPolicies []RequestHashPolicy `json:"requestHashPolicies,omitempty"`
}

// HTTPProxyStatus reports the current state of the HTTPProxy.
type HTTPProxyStatus struct {
	// CurrentStatus is the legacy validity summary: "valid", "invalid" or "orphaned".
	//
	// +optional
	CurrentStatus string `json:"currentStatus,omitempty"`

	// Description is the legacy human readable summary of CurrentStatus.
	//
	// +optional
	Description string `json:"description,omitempty"`

	// LoadBalancer is the status of the load balancer in front of the proxy.
	//
	// +optional
	LoadBalancer corev1.LoadBalancerStatus `json:"loadBalancer,omitzero"`

	// Conditions contains information about the current status of the HTTPProxy,
	// in an upstream-friendly container.
	//
	// Contour will update a single condition, `Valid`, that is in normal-true polarity.
	// That is, when `currentStatus` is `valid`, the `Valid` condition will be `status: true`,
	// and vice versa.
	//
	// Contour will leave untouched any other Conditions set in this block,
	// in case some other controller wants to add a Condition.
	//
	// If you are another controller owner and wish to add a condition, you *should*
	// namespace your condition with a label, like `controller.domain.com/ConditionName`.
	//
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []DetailedCondition `json:"conditions,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,path=httpproxies,singular=httpproxy,shortName=proxy;proxies
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="FQDN",type="string",JSONPath=".spec.virtualhost.fqdn",description="Fully qualified domain name"
// +kubebuilder:printcolumn:name="TLS Secret",type="string",JSONPath=".spec.virtualhost.tls.secretName",description="Secret with TLS credentials"
// +kubebuilder:printcolumn:name="Status",type="string",JSONPath=".status.currentStatus",description="The current status of the HTTPProxy"
// +kubebuilder:printcolumn:name="Status Description",type="string",JSONPath=".status.description",description="Description of the current status"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"

// HTTPProxy is an Ingress CRD specification.
type HTTPProxy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`

	Spec HTTPProxySpec `json:"spec"`

	// Status is a container for computed information about the HTTPProxy.
	//
	// +optional
	Status HTTPProxyStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// HTTPProxyList is a list of HTTPProxies.
type HTTPProxyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`
	Items           []HTTPProxy `json:"items"`
}
