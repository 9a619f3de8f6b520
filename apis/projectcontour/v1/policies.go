package v1

// The HTTPProxy policies of the projectcontour.io API beyond routing and
// external authorization: TCP proxying, CORS, JWT verification, IP
// filtering, rate limiting, redirects and direct responses, retries, health
// checks, load balancing, path and cookie rewriting. The types carry them
// whole so that the API server keeps every field a user writes.

// TCPProxy proxies TCP connections to a set of services.
type TCPProxy struct {
	// LoadBalancerPolicy balances connections across the services'
	// endpoints. Cookie and RequestHash do not apply here.
	//
	// +optional
	LoadBalancerPolicy *LoadBalancerPolicy `json:"loadBalancerPolicy,omitempty"`

	// Services receive the connections.
	//
	// +optional
	Services []Service `json:"services,omitempty"`

	// Include delegates the TCP proxy to another HTTPProxy.
	//
	// +optional
	Include *TCPProxyInclude `json:"include,omitempty"`

	// IncludesDeprecated is the old, plural spelling of Include, kept for
	// compatibility.
	//
	// +optional
	IncludesDeprecated *TCPProxyInclude `json:"includes,omitempty"`

	// HealthCheckPolicy checks the services' endpoints actively over TCP.
	//
	// +optional
	HealthCheckPolicy *TCPHealthCheckPolicy `json:"healthCheckPolicy,omitempty"`
}

// TCPProxyInclude names the HTTPProxy that holds the TCP proxy.
type TCPProxyInclude struct {
	// Name of the HTTPProxy.
	//
	// +required
	Name string `json:"name"`

	// Namespace of the HTTPProxy; defaults to the including one's.
	//
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// CORSHeaderValue is a header name or method in a CORS policy.
//
// +kubebuilder:validation:Pattern="^[a-zA-Z0-9!#$%&'*+.^_`|~-]+$"
type CORSHeaderValue string

// CORSPolicy is a cross-origin resource sharing policy.
type CORSPolicy struct {
	// AllowCredentials allows requests with credentials.
	//
	// +optional
	AllowCredentials bool `json:"allowCredentials,omitempty"`

	// AllowOrigin lists the allowed origins: "*", an exact
	// "scheme://host[:port]", or a regular expression.
	//
	// +required
	// +kubebuilder:validation:MinItems=1
	AllowOrigin []string `json:"allowOrigin"`

	// AllowMethods is the access-control-allow-methods header.
	//
	// +required
	// +kubebuilder:validation:MinItems=1
	AllowMethods []CORSHeaderValue `json:"allowMethods"`

	// AllowHeaders is the access-control-allow-headers header.
	//
	// +optional
	// +kubebuilder:validation:MinItems=1
	AllowHeaders []CORSHeaderValue `json:"allowHeaders,omitempty"`

	// ExposeHeaders is the access-control-expose-headers header.
	//
	// +optional
	// +kubebuilder:validation:MinItems=1
	ExposeHeaders []CORSHeaderValue `json:"exposeHeaders,omitempty"`

	// MaxAge is how long a preflight answer may be cached, a Go duration;
	// "0" disables caching.
	//
	// +optional
	// +kubebuilder:validation:Pattern=`^(((\d*(\.\d*)?h)|(\d*(\.\d*)?m)|(\d*(\.\d*)?s)|(\d*(\.\d*)?ms)|(\d*(\.\d*)?us)|(\d*(\.\d*)?µs)|(\d*(\.\d*)?ns))+|0)$`
	MaxAge string `json:"maxAge,omitempty"`

	// AllowPrivateNetwork allows private network access requests.
	//
	// +optional
	AllowPrivateNetwork bool `json:"allowPrivateNetwork,omitempty"`
}

// JWTProvider verifies JSON Web Tokens.
type JWTProvider struct {
	// Name of the provider, unique in the virtual host.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`

	// Default makes the provider apply to every route that does not choose
	// another; at most one provider may be the default.
	//
	// +optional
	Default bool `json:"default,omitempty"`

	// Issuer is the required "iss" claim; unchecked when empty.
	//
	// +optional
	Issuer string `json:"issuer,omitempty"`

	// Audiences are the accepted "aud" claims; unchecked when empty.
	//
	// +optional
	Audiences []string `json:"audiences,omitempty"`

	// RemoteJWKS is where the signing keys are fetched from.
	//
	// +required
	RemoteJWKS RemoteJWKS `json:"remoteJWKS"`

	// ForwardJWT keeps the token in the request sent upstream.
	//
	// +optional
	ForwardJWT bool `json:"forwardJWT,omitempty"`
}

// RemoteJWKS is a JSON Web Key Set fetched over HTTP(S).
type RemoteJWKS struct {
	// URI of the key set.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	URI string `json:"uri"`

	// UpstreamValidation verifies the key server's certificate.
	//
	// +optional
	UpstreamValidation *UpstreamValidation `json:"validation,omitempty"`

	// Timeout of the fetch, a Go duration; defaults to 1s.
	//
	// +optional
	// +kubebuilder:validation:Pattern=`^(((\d*(\.\d*)?h)|(\d*(\.\d*)?m)|(\d*(\.\d*)?s)|(\d*(\.\d*)?ms)|(\d*(\.\d*)?us)|(\d*(\.\d*)?µs)|(\d*(\.\d*)?ns))+)$`
	Timeout string `json:"timeout,omitempty"`

	// CacheDuration is how long the key set is cached, a Go duration;
	// Envoy's default is 5m.
	//
	// +optional
	// +kubebuilder:validation:Pattern=`^(((\d*(\.\d*)?h)|(\d*(\.\d*)?m)|(\d*(\.\d*)?s)|(\d*(\.\d*)?ms)|(\d*(\.\d*)?us)|(\d*(\.\d*)?µs)|(\d*(\.\d*)?ns))+)$`
	CacheDuration string `json:"cacheDuration,omitempty"`

	// DNSLookupFamily restricts the address families the URI's host is
	// resolved to: v4, v6, or auto (IPv6 first, then IPv4).
	//
	// +optional
	// +kubebuilder:validation:Enum=auto;v4;v6
	DNSLookupFamily string `json:"dnsLookupFamily,omitempty"`
}

// JWTVerificationPolicy chooses the JWT verification of a route.
type JWTVerificationPolicy struct {
	// Require names the provider the route requires instead of the
	// default one. Exclusive with Disabled.
	//
	// +optional
	Require string `json:"require,omitempty"`

	// Disabled turns JWT verification off for the route. Exclusive with
	// Require.
	//
	// +optional
	Disabled bool `json:"disabled,omitempty"`
}

// IPFilterSource is the address an IP filter rule looks at.
//
// +kubebuilder:validation:Enum=Peer;Remote
type IPFilterSource string

const (
	// IPFilterSourcePeer is the address of the network peer, ignoring PROXY
	// protocol and X-Forwarded-For.
	IPFilterSourcePeer IPFilterSource = "Peer"

	// IPFilterSourceRemote is the client's address, from PROXY protocol and
	// X-Forwarded-For where they apply.
	IPFilterSourceRemote IPFilterSource = "Remote"
)

// IPFilterPolicy is one IP filter rule.
type IPFilterPolicy struct {
	// Source is the address the rule looks at.
	//
	// +required
	Source IPFilterSource `json:"source"`

	// CIDR is an IPv4 or IPv6 block, or a single address.
	//
	// +required
	CIDR string `json:"cidr"`
}

// HTTPDirectResponsePolicy answers requests with a fixed response.
type HTTPDirectResponsePolicy struct {
	// StatusCode of the response.
	//
	// +required
	// +kubebuilder:validation:Minimum=200
	// +kubebuilder:validation:Maximum=599
	StatusCode int `json:"statusCode"`

	// Body of the response; none when empty. Keep it short.
	//
	// +optional
	Body string `json:"body,omitempty"`
}

// HTTPRequestRedirectPolicy answers requests with a redirect. Unset parts
// of the Location header come from the request.
type HTTPRequestRedirectPolicy struct {
	// Scheme of the Location.
	//
	// +optional
	// +kubebuilder:validation:Enum=http;https
	Scheme *string `json:"scheme,omitempty"`

	// Hostname of the Location, without wildcards.
	//
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Hostname *string `json:"hostname,omitempty"`

	// Port of the Location.
	//
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port *int32 `json:"port,omitempty"`

	// StatusCode of the redirect; defaults to 302.
	//
	// +optional
	// +kubebuilder:default=302
	StatusCode *RedirectResponseCode `json:"statusCode,omitempty"`

	// Path replaces the whole path. Exclusive with Prefix.
	//
	// +optional
	// +kubebuilder:validation:Pattern=`^\/.*$`
	Path *string `json:"path,omitempty"`

	// Prefix replaces the matched prefix (or path). Exclusive with Path.
	//
	// +optional
	// +kubebuilder:validation:Pattern=`^\/.*$`
	Prefix *string `json:"prefix,omitempty"`
}

// RedirectResponseCode is an HTTP redirect status code.
//
// +kubebuilder:validation:Enum=301;302;303;307;308
type RedirectResponseCode uint32

// HTTPInternalRedirectPolicy makes the proxy follow upstream redirects.
type HTTPInternalRedirectPolicy struct {
	// MaxInternalRedirects is how many redirects one request may follow.
	//
	// +optional
	MaxInternalRedirects uint32 `json:"maxInternalRedirects,omitempty"`

	// RedirectResponseCodes are the statuses followed; 302 only when empty.
	//
	// +optional
	RedirectResponseCodes []RedirectResponseCode `json:"redirectResponseCodes,omitempty"`

	// AllowCrossSchemeRedirect: Always, Never (default), or SafeOnly (an
	// HTTPS request may be redirected to HTTP or HTTPS, an HTTP one only to
	// HTTP).
	//
	// +optional
	// +kubebuilder:validation:Enum=Always;Never;SafeOnly
	// +kubebuilder:default=Never
	AllowCrossSchemeRedirect string `json:"allowCrossSchemeRedirect,omitempty"`

	// DenyRepeatedRouteRedirect refuses a redirect to a route that an
	// earlier redirect of the request already went through.
	//
	// +optional
	DenyRepeatedRouteRedirect bool `json:"denyRepeatedRouteRedirect,omitempty"`
}

// CookieRewritePolicy rewrites attributes of a Set-Cookie header.
type CookieRewritePolicy struct {
	// Name of the cookie.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	// +kubebuilder:validation:Pattern=`^[^()<>@,;:\\"\/[\]?={} \t\x7f\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f]+$`
	Name string `json:"name"`

	// PathRewrite rewrites the Path attribute.
	//
	// +optional
	PathRewrite *CookiePathRewrite `json:"pathRewrite,omitempty"`

	// DomainRewrite rewrites the Domain attribute.
	//
	// +optional
	DomainRewrite *CookieDomainRewrite `json:"domainRewrite,omitempty"`

	// Secure sets or clears the Secure attribute.
	//
	// +optional
	Secure *bool `json:"secure,omitempty"`

	// SameSite sets the SameSite attribute.
	//
	// +optional
	// +kubebuilder:validation:Enum=Strict;Lax;None
	SameSite *string `json:"sameSite,omitempty"`
}

// CookiePathRewrite is the new Path of a cookie.
type CookiePathRewrite struct {
	// Value of the Path attribute.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	// +kubebuilder:validation:Pattern=`^[^;\x7f\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f]+$`
	Value string `json:"value"`
}

// CookieDomainRewrite is the new Domain of a cookie.
type CookieDomainRewrite struct {
	// Value of the Domain attribute.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	// +kubebuilder:validation:Pattern="^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
	Value string `json:"value"`
}

// RateLimitPolicy rate limits requests locally, globally, or both.
type RateLimitPolicy struct {
	// Local limits are counted by each Envoy on its own.
	//
	// +optional
	Local *LocalRateLimitPolicy `json:"local,omitempty"`

	// Global limits are decided by an external rate limit service from the
	// descriptors sent to it.
	//
	// +optional
	Global *GlobalRateLimitPolicy `json:"global,omitempty"`
}

// LocalRateLimitPolicy is a token bucket per Envoy.
type LocalRateLimitPolicy struct {
	// Requests allowed per Unit.
	//
	// +required
	// +kubebuilder:validation:Minimum=1
	Requests uint32 `json:"requests"`

	// Unit of time: second, minute or hour.
	//
	// +required
	// +kubebuilder:validation:Enum=second;minute;hour
	Unit string `json:"unit"`

	// Burst is how many requests above the rate are allowed briefly.
	//
	// +optional
	Burst uint32 `json:"burst,omitempty"`

	// ResponseStatusCode answers limited requests (400-599); Envoy's
	// default is 429.
	//
	// +optional
	// +kubebuilder:validation:Minimum=400
	// +kubebuilder:validation:Maximum=599
	ResponseStatusCode uint32 `json:"responseStatusCode,omitempty"`

	// ResponseHeadersToAdd are set on the responses to limited requests.
	//
	// +optional
	ResponseHeadersToAdd []HeaderValue `json:"responseHeadersToAdd,omitempty"`
}

// GlobalRateLimitPolicy is the descriptors sent to the rate limit service.
type GlobalRateLimitPolicy struct {
	// Disabled opts out of the default global policy of the configuration.
	//
	// +optional
	Disabled bool `json:"disabled,omitempty"`

	// Descriptors sent with each request.
	//
	// +optional
	// +kubebuilder:validation:MinItems=1
	Descriptors []RateLimitDescriptor `json:"descriptors,omitempty"`
}

// RateLimitDescriptor is a list of entries.
type RateLimitDescriptor struct {
	// Entries generate the key-value pairs of the descriptor.
	//
	// +required
	// +kubebuilder:validation:MinItems=1
	Entries []RateLimitDescriptorEntry `json:"entries,omitempty"`
}

// RateLimitDescriptorEntry generates one key-value pair; exactly one field
// must be set.
type RateLimitDescriptorEntry struct {
	// GenericKey is a fixed key and value.
	//
	// +optional
	GenericKey *GenericKeyDescriptor `json:"genericKey,omitempty"`

	// RequestHeader takes the value of a request header, when present.
	//
	// +optional
	RequestHeader *RequestHeaderDescriptor `json:"requestHeader,omitempty"`

	// RequestHeaderValueMatch gives a fixed value (key "header_match") when
	// the request's headers match.
	//
	// +optional
	RequestHeaderValueMatch *RequestHeaderValueMatchDescriptor `json:"requestHeaderValueMatch,omitempty"`

	// RemoteAddress is the client address (key "remote_address").
	//
	// +optional
	RemoteAddress *RemoteAddressDescriptor `json:"remoteAddress,omitempty"`
}

// GenericKeyDescriptor is a fixed descriptor entry.
type GenericKeyDescriptor struct {
	// Key of the entry; "generic_key" when empty.
	//
	// +optional
	Key string `json:"key,omitempty"`

	// Value of the entry.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	Value string `json:"value,omitempty"`
}

// RequestHeaderDescriptor is an entry whose value is a request header's.
type RequestHeaderDescriptor struct {
	// HeaderName is the header read.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	HeaderName string `json:"headerName,omitempty"`

	// DescriptorKey is the key of the entry.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	DescriptorKey string `json:"descriptorKey,omitempty"`
}

// RequestHeaderValueMatchDescriptor is an entry generated when the request's
// headers match (or, with ExpectMatch false, do not match).
type RequestHeaderValueMatchDescriptor struct {
	// Headers are the match criteria.
	//
	// +optional
	// +kubebuilder:validation:MinItems=1
	Headers []HeaderMatchCondition `json:"headers,omitempty"`

	// ExpectMatch: generate the entry on a match (true, the default) or on
	// a mismatch (false).
	//
	// +optional
	// +kubebuilder:default=true
	ExpectMatch bool `json:"expectMatch,omitempty"`

	// Value of the entry.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	Value string `json:"value,omitempty"`
}

// RemoteAddressDescriptor is the client address entry; it has no settings.
type RemoteAddressDescriptor struct{}

// RetryOn is a condition on which a request is retried.
//
// +kubebuilder:validation:Enum="5xx";gateway-error;reset;reset-before-request;connect-failure;envoy-ratelimited;retriable-4xx;refused-stream;retriable-status-codes;retriable-headers;http3-post-connect-failure;cancelled;deadline-exceeded;internal;resource-exhausted;unavailable
type RetryOn string

// RetryPolicy retries failed requests.
type RetryPolicy struct {
	// NumRetries is the maximum number of retries; -1 disables retries and
	// 0 means Envoy's default of 1.
	//
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=-1
	NumRetries int64 `json:"count,omitempty"`

	// PerTryTimeout is the timeout of each attempt, a Go duration.
	//
	// +optional
	// +kubebuilder:validation:Pattern=`^(((\d*(\.\d*)?h)|(\d*(\.\d*)?m)|(\d*(\.\d*)?s)|(\d*(\.\d*)?ms)|(\d*(\.\d*)?us)|(\d*(\.\d*)?µs)|(\d*(\.\d*)?ns))+|infinity|infinite)$`
	PerTryTimeout string `json:"perTryTimeout,omitempty"`

	// RetryOn are the HTTP and gRPC conditions that trigger a retry.
	//
	// +optional
	RetryOn []RetryOn `json:"retryOn,omitempty"`

	// RetriableStatusCodes are the statuses retried under the
	// retriable-status-codes condition.
	//
	// +optional
	RetriableStatusCodes []uint32 `json:"retriableStatusCodes,omitempty"`
}

// HTTPHealthCheckPolicy checks upstream endpoints over HTTP.
type HTTPHealthCheckPolicy struct {
	// Path requested by the checks.
	//
	// +required
	Path string `json:"path"`

	// Host header of the checks; "contour-envoy-healthcheck" when empty.
	//
	// +optional
	Host string `json:"host,omitempty"`

	// IntervalSeconds between checks.
	//
	// +optional
	IntervalSeconds int64 `json:"intervalSeconds,omitempty"`

	// TimeoutSeconds to wait for an answer.
	//
	// +optional
	TimeoutSeconds int64 `json:"timeoutSeconds,omitempty"`

	// UnhealthyThresholdCount failed checks mark an endpoint unhealthy.
	//
	// +optional
	// +kubebuilder:validation:Minimum=0
	UnhealthyThresholdCount int64 `json:"unhealthyThresholdCount,omitempty"`

	// HealthyThresholdCount passed checks mark an endpoint healthy.
	//
	// +optional
	// +kubebuilder:validation:Minimum=0
	HealthyThresholdCount int64 `json:"healthyThresholdCount,omitempty"`

	// ExpectedStatuses are the healthy statuses, half-open ranges within
	// [100,600); only 200 when empty.
	//
	// +optional
	ExpectedStatuses []HTTPStatusRange `json:"expectedStatuses,omitempty"`
}

// HTTPStatusRange is the half-open range [Start, End) of HTTP statuses.
type HTTPStatusRange struct {
	// Start of the range, inclusive.
	//
	// +required
	// +kubebuilder:validation:Minimum=100
	// +kubebuilder:validation:Maximum=599
	Start int64 `json:"start"`

	// End of the range, exclusive.
	//
	// +required
	// +kubebuilder:validation:Minimum=101
	// +kubebuilder:validation:Maximum=600
	End int64 `json:"end"`
}

// TCPHealthCheckPolicy checks upstream endpoints by connecting to them.
type TCPHealthCheckPolicy struct {
	// IntervalSeconds between checks.
	//
	// +optional
	IntervalSeconds int64 `json:"intervalSeconds,omitempty"`

	// TimeoutSeconds to wait for a connection.
	//
	// +optional
	TimeoutSeconds int64 `json:"timeoutSeconds,omitempty"`

	// UnhealthyThresholdCount failed checks mark an endpoint unhealthy.
	//
	// +optional
	UnhealthyThresholdCount uint32 `json:"unhealthyThresholdCount,omitempty"`

	// HealthyThresholdCount passed checks mark an endpoint healthy.
	//
	// +optional
	HealthyThresholdCount uint32 `json:"healthyThresholdCount,omitempty"`
}

// SlowStartPolicy ramps up the traffic to new endpoints. It applies to the
// RoundRobin and WeightedLeastRequest strategies.
type SlowStartPolicy struct {
	// Window is the length of the ramp-up, a Go duration.
	//
	// +required
	// +kubebuilder:validation:Pattern=`^(((\d*(\.\d*)?h)|(\d*(\.\d*)?m)|(\d*(\.\d*)?s)|(\d*(\.\d*)?ms)|(\d*(\.\d*)?us)|(\d*(\.\d*)?µs)|(\d*(\.\d*)?ns))+)$`
	Window string `json:"window"`

	// Aggression shapes the ramp-up curve, a decimal above 0; 1.0 (the
	// default) is linear.
	//
	// +optional
	// +kubebuilder:default=`1.0`
	// +kubebuilder:validation:Pattern=`^([0-9]+([.][0-9]+)?|[.][0-9]+)$`
	Aggression string `json:"aggression,omitempty"`

	// MinimumWeightPercent is the share of traffic a new endpoint starts
	// with; defaults to 10. Serialised even when 0, which is a valid value.
	//
	// +optional
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	MinimumWeightPercent uint32 `json:"minWeightPercent"`
}

// PathRewritePolicy rewrites the request path after routing; exactly one
// field may be set.
type PathRewritePolicy struct {
	// ReplacePrefix replaces path prefixes.
	//
	// +optional
	ReplacePrefix []ReplacePrefix `json:"replacePrefix,omitempty"`
}

// ReplacePrefix replaces a path prefix.
type ReplacePrefix struct {
	// Prefix is the routing prefix replaced, as rendered by the include
	// chain; every prefix when empty.
	//
	// +optional
	// +kubebuilder:validation:MinLength=1
	Prefix string `json:"prefix,omitempty"`

	// Replacement of the prefix.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	Replacement string `json:"replacement"`
}

// RequestHashPolicy is one request attribute hashed by the RequestHash
// strategy; exactly one attribute may be set.
type RequestHashPolicy struct {
	// Terminal stops the hashing at this policy when its attribute is
	// present.
	//
	// +optional
	Terminal bool `json:"terminal,omitempty"`

	// HeaderHashOptions hashes a request header.
	//
	// +optional
	HeaderHashOptions *HeaderHashOptions `json:"headerHashOptions,omitempty"`

	// QueryParameterHashOptions hashes a query parameter.
	//
	// +optional
	QueryParameterHashOptions *QueryParameterHashOptions `json:"queryParameterHashOptions,omitempty"`

	// HashSourceIP hashes the client address.
	//
	// +optional
	HashSourceIP bool `json:"hashSourceIP,omitempty"`
}

// HeaderHashOptions names the request header hashed.
type HeaderHashOptions struct {
	// HeaderName of the header; no hash when the request lacks it.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	HeaderName string `json:"headerName,omitempty"`
}

// QueryParameterHashOptions names the query parameter hashed.
type QueryParameterHashOptions struct {
	// ParameterName of the parameter; no hash when the request lacks it.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	ParameterName string `json:"parameterName,omitempty"`
}
