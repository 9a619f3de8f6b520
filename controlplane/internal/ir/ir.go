// Package ir is the control plane's intermediate model: what Envoy must do,
// independent of both the Kubernetes API types (the builder's input) and the
// Envoy protos (the translator's output). Everything here is already
// validated and resolved; the translator does not make decisions.
package ir

import "time"

// Model is the whole routing model computed from one snapshot of inputs.
type Model struct {
	// Listeners are Envoy's listeners, sorted by name: the shared HTTP and
	// HTTPS listeners (HTTPListenerName, HTTPSListenerName), which serve the
	// HTTPProxies and the Gateway listeners on their ports, and one for
	// each other port of a Gateway listener.
	Listeners []*Listener
	// Clusters are deduplicated by name and sorted.
	Clusters []*Cluster
	// Secrets are deduplicated by name and sorted.
	Secrets []*Secret
	// GlobalAuth is the external authorization applied to the plaintext
	// listeners, the fallback chain and secure hosts without their own.
	GlobalAuth *ExtAuth
	// GlobalExtProc is the external processor of the plaintext listeners
	// and the fallback chain (secure hosts get theirs in
	// SecureVirtualHost.ExtProc).
	GlobalExtProc *ExtProc
	// ExtensionPolicies are the valid objects of the extensions' policy
	// kinds, sorted by kind, namespace and name, attached or not
	// (PostTranslateModify of the Envoy Gateway dialect receives them).
	ExtensionPolicies []ExtensionResource
}

// Names of the shared listeners.
const (
	HTTPListenerName  = "ingress_http"
	HTTPSListenerName = "ingress_https"
)

// Listener returns the model's listener of this name, or nil.
func (m *Model) Listener(name string) *Listener {
	for _, l := range m.Listeners {
		if l.Name == name {
			return l
		}
	}
	return nil
}

// Shared reports whether l is one of the shared listeners, which the
// configuration asks for (the others are Gateway ports of their own).
func (l *Listener) Shared() bool {
	return l.Name == HTTPListenerName || l.Name == HTTPSListenerName
}

// Listener is one Envoy listener. A plaintext listener serves its Insecure
// hosts through one route configuration, named after it, with the global
// authorization and processing. A TLS listener serves its Secure hosts
// and TCPHosts, one filter chain each, matched by SNI, and the Fallback
// chain to clients whose SNI matches none.
type Listener struct {
	// Name is the Envoy listener's: HTTPListenerName, HTTPSListenerName,
	// or http-<port> and https-<port> for a Gateway port of its own.
	Name string
	// Address and Port are where Envoy binds it.
	Address string
	Port    uint32
	TLS     bool
	// Insecure are a plaintext listener's virtual hosts.
	Insecure []*VirtualHost
	// Secure are a TLS listener's virtual hosts.
	Secure []*SecureVirtualHost
	// TCPHosts are a TLS listener's hosts whose connections are proxied
	// over TCP (an HTTPProxy's tcpproxy, a Gateway's TLSRoutes), or a
	// plaintext listener's one host, "*", whose every connection is (a
	// Gateway's TCP listener, tcp-<port>): it then has no Insecure hosts.
	TCPHosts []*TCPHost
	// Fallback, when set, is a TLS listener's default filter chain, for
	// clients that send no (or an unknown) SNI name.
	Fallback *FallbackChain
	// UDP, when set, makes it a UDP listener (a Gateway's UDP listener,
	// udp-<port>): a socket of its own beside any TCP listener of the
	// port, whose datagrams go to UDP's cluster. It then has no hosts.
	UDP *UDPProxy
	// KeepHostPort matches hosts on the Host header as the client sent it,
	// port included, ignoring the port (the Gateway API's way) instead of
	// stripping the port (Contour's).
	KeepHostPort bool
	// Origins are the Gateways that asked for the listener (none for the
	// shared ones, which the configuration asks for).
	Origins Origins
	// Extensions are the extensions' policies attached to a Gateway, or to
	// one of its listeners, that has hosts here (PostHTTPListenerModify
	// receives them), each once, in the order the hosts were placed.
	Extensions []ExtensionResource
}

// VirtualHost is a set of routes served for one host name.
type VirtualHost struct {
	// FQDN is a host name, a wildcard ("*.example.com": any host ending in
	// .example.com) or "*" (any host). On a TLS listener it is also the
	// SNI name of the host's filter chain ("*": no SNI match).
	FQDN string
	// Origins are the root HTTPProxy and the valid HTTPProxies it
	// includes.
	Origins Origins
	Routes  []*Route
	// CORS, when set, is the host's cross-origin resource sharing policy.
	CORS *CORSPolicy
	// RateLimit, when set, limits the requests of the host's routes
	// without a limit of their own: one bucket for all of them.
	RateLimit *LocalRateLimit
	// GlobalRateLimits, when set, are the descriptors the requests of the
	// host's routes without their own send to the global rate limit
	// service.
	GlobalRateLimits *GlobalRateLimits
	// version names this host's content for translator.Cache (see
	// Stamp); 0 for none.
	version uint64
}

// GlobalRateLimits are the descriptors a request sends to the global rate
// limit service, which answers whether it is over a limit.
type GlobalRateLimits struct {
	Service *RateLimitService
	// Descriptors are sent (each one whose entries all apply); none with
	// Disabled.
	Descriptors []RateLimitDescriptor
	// Disabled (on a route): the route sends neither its own descriptors
	// nor its host's.
	Disabled bool
}

// RateLimitService is the global rate limit service (the configuration
// file's rateLimitService), an ExtensionService's cluster.
type RateLimitService struct {
	Cluster, Authority string
	// Domain names the service's configuration of the descriptors.
	Domain  string
	Timeout time.Duration
	// FailOpen lets requests through when the service fails; otherwise
	// they are answered 500.
	FailOpen bool
	// XRateLimitHeaders adds the X-RateLimit-* headers to responses.
	XRateLimitHeaders bool
	// ResourceExhausted answers limited gRPC requests RESOURCE_EXHAUSTED
	// (instead of UNAVAILABLE).
	ResourceExhausted bool
}

// RateLimitDescriptor is a list of entries, generated together.
type RateLimitDescriptor struct {
	Entries []RateLimitEntry
}

// RateLimitEntry is one key and value of a descriptor; exactly one of its
// fields is set. A descriptor with an entry that does not apply (a header
// the request lacks, a header match that fails) is not sent.
type RateLimitEntry struct {
	// GenericKey is a fixed key ("generic_key" when empty) and value.
	GenericKey *GenericKeyEntry
	// RequestHeader is the value of a request header, under a key.
	RequestHeader *RequestHeaderEntry
	// HeaderMatch is a fixed value (key "header_match") when the request's
	// headers match (or, without ExpectMatch, do not).
	HeaderMatch *HeaderMatchEntry
	// RemoteAddress is the client's address (key "remote_address").
	RemoteAddress bool
}

// GenericKeyEntry is a fixed descriptor entry.
type GenericKeyEntry struct{ Key, Value string }

// RequestHeaderEntry is a request header's value as an entry.
type RequestHeaderEntry struct{ Header, Key string }

// HeaderMatchEntry is an entry generated on a header match.
type HeaderMatchEntry struct {
	Headers     []HeaderMatch
	Value       string
	ExpectMatch bool
}

// LocalRateLimit is a token bucket of requests, kept by each Envoy on its
// own: Requests tokens are added every Interval, up to Requests+Burst; a
// request without a token is answered Status.
type LocalRateLimit struct {
	Requests uint32
	Burst    uint32
	Interval time.Duration
	// Status of the limited requests' answers; 0 for 429.
	Status uint32
	// ResponseHeaders are set on the limited requests' answers.
	ResponseHeaders []HeaderValue
}

// CORSPolicy answers the cross-origin requests of a virtual host (or a
// route): Envoy
// answers their preflights, and adds the access-control headers to the
// responses of the origins it allows.
type CORSPolicy struct {
	// AllowOrigins are the origins allowed.
	AllowOrigins []CORSOrigin
	// AllowMethods, AllowHeaders and ExposeHeaders are the values of the
	// access-control headers of those names.
	AllowMethods, AllowHeaders, ExposeHeaders []string
	// MaxAge is how long a browser may cache a preflight's answer, in
	// whole seconds; nil leaves it to the browser.
	MaxAge *time.Duration
	// AllowCredentials allows requests with credentials (cookies,
	// authorization headers).
	AllowCredentials bool
	// AllowPrivateNetwork answers private network access preflights.
	AllowPrivateNetwork bool
	// AnswerUnmatchedPreflights: Envoy answers the preflights of the
	// origins it does not allow itself (200, without access-control
	// headers), as the Gateway API asks, instead of forwarding them
	// upstream (Contour's way).
	AnswerUnmatchedPreflights bool
}

// CORSOrigin is one allowed origin: "*" (any), an origin compared
// ignoring case, or (Regex) an RE2 expression the whole origin matches.
type CORSOrigin struct {
	Value string
	Regex bool
}

// SecureVirtualHost is a TLS virtual host with its own HCM (and so its own
// authorization filter).
type SecureVirtualHost struct {
	VirtualHost
	// Secret names the server certificate (an SDS secret).
	Secret           string
	MinTLSVersion    string // "1.2" or "1.3"
	MaxTLSVersion    string // "1.2" or "1.3"
	ClientValidation *ClientValidation
	// Auth is the authorization of this host's HCM: its own, or the global
	// one; nil for none.
	Auth *ExtAuth
	// ExtProc is the external processor of this host's HCM: its own, or
	// the global one; nil for none.
	ExtProc *ExtProc
	// JWTProviders verify the JSON Web Tokens of the routes that name
	// one (Route.JWTProvider); none for no JWT verification.
	JWTProviders []JWTProvider
	// Also are more virtual hosts served on this host's connections (the
	// catch-all host "*" of a Gateway listener serves the listener's
	// other hosts to clients whose SNI names none of them).
	Also []*VirtualHost
	// Misdirected are the host names (exact, "*.suffix" or "*") that
	// other filter chains of the listener serve: a request for one of them
	// on this host's connections is answered 421 (Misdirected Request), so
	// that the client opens a connection with the right SNI.
	Misdirected []string
}

// TCPHost proxies the TLS connections for one SNI name to its clusters
// over TCP: with Passthrough the TLS is not terminated (the upstream
// serves it); otherwise Envoy terminates it (as a SecureVirtualHost's) and
// the upstream receives the decrypted stream. No HTTP filter sees them.
type TCPHost struct {
	FQDN    string
	Origins Origins
	// Passthrough leaves the TLS to the upstream: Secret, the versions
	// and ClientValidation are unused.
	Passthrough      bool
	Secret           string
	MinTLSVersion    string
	MaxTLSVersion    string
	ClientValidation *ClientValidation
	// Clusters receive the connections, by Weight.
	Clusters []WeightedCluster
}

// UDPProxy is what a UDP listener does with its datagrams: each client
// (source address and port) is a session, proxied to an endpoint of
// Cluster picked when the session starts, and closed after IdleTimeout
// without a datagram either way. A Cluster with no cluster in the model
// (an invalid backend) drops every datagram.
type UDPProxy struct {
	Cluster     string
	IdleTimeout time.Duration
	// Origins are the route it serves (the oldest attached) and its
	// Gateway.
	Origins Origins
}

// JWTProvider verifies JSON Web Tokens against the keys of a JWKS
// fetched over HTTP(S).
type JWTProvider struct {
	Name string
	// Issuer is the required "iss"; unchecked when empty.
	Issuer string
	// Audiences are the accepted "aud"; unchecked when empty.
	Audiences []string
	// JWKSURI is fetched through the cluster JWKSCluster, within
	// JWKSTimeout.
	JWKSURI     string
	JWKSCluster string
	JWKSTimeout time.Duration
	// CacheDuration is how long the keys are kept; nil for Envoy's
	// default (5 minutes).
	CacheDuration *time.Duration
	// Forward keeps the token in the request sent upstream.
	Forward bool
}

// FallbackChain serves non-SNI clients with the fallback certificate.
type FallbackChain struct {
	Secret       string
	VirtualHosts []*VirtualHost
}

// ClientValidation requires (or requests) client certificates.
type ClientValidation struct {
	// CASecret names an SDS validation-context secret; with
	// SkipVerification it may be empty, and a certificate is accepted
	// whether or not it verifies against it.
	CASecret         string
	SkipVerification bool
	Optional         bool
	// ForwardClientCert, when set, has the host's HCM send the upstream an
	// x-forwarded-client-cert header of its own (a client's is dropped)
	// with these parts of the client certificate.
	ForwardClientCert *ForwardClientCert
}

// ForwardClientCert are the parts of a client certificate forwarded in
// x-forwarded-client-cert, besides its hash (always).
type ForwardClientCert struct {
	Subject, Cert, Chain, DNS, URI bool
}

// ExtAuth configures Envoy's ext_authz filter for one HCM.
type ExtAuth struct {
	// Cluster is the ExtensionService cluster, extension/<namespace>/<name>.
	Cluster string
	// Authority is the :authority Envoy sends to the auth server (the
	// ExtensionService's TLS subject name, or its cluster name).
	Authority       string
	Timeout         time.Duration // 0 means no timeout
	FailOpen        bool
	WithRequestBody *BufferSettings
	// HTTP, when set, makes the server an HTTP one (the raw HTTP flavour
	// of ext_authz); nil is the gRPC protocol.
	HTTP *HTTPAuthService
	// Origins: the root HTTPProxy of a host's own authorization; none for
	// the global one (the configuration file).
	Origins Origins
}

// HTTPAuthService is how Envoy talks to an HTTP authorization server.
type HTTPAuthService struct {
	// PathPrefix is prepended to the request's path in the check.
	PathPrefix string
	// AllowedAuthorizationHeaders are the request headers sent to the
	// server (besides Envoy's fixed ones); AllowedUpstreamHeaders the
	// headers of an allowing answer added to the upstream request.
	AllowedAuthorizationHeaders []NameMatch
	AllowedUpstreamHeaders      []NameMatch
}

// NameMatch matches a header name: Kind is exact, prefix, suffix or
// contains.
type NameMatch struct {
	Kind       string
	Value      string
	IgnoreCase bool
}

// BufferSettings asks ext_authz to send the request body.
type BufferSettings struct {
	MaxRequestBytes     uint32
	AllowPartialMessage bool
	PackAsBytes         bool
}

// ExtProc configures Envoy's ext_proc filter for one HCM.
type ExtProc struct {
	Cluster   string
	Authority string
	// Timeout of the gRPC stream and of each message: nil leaves Envoy's
	// defaults (no stream timeout, 200ms per message), 0 is no timeout.
	Timeout           *time.Duration
	FailOpen          bool
	Mode              *ProcessingMode
	MutationRules     *MutationRules
	AllowModeOverride bool
	// Origins: the HTTPProxy that chose this processor; none for the
	// global one (the configuration file).
	Origins Origins
}

// ProcessingMode says what the processor receives. Values are the API's
// (DEFAULT, SEND, SKIP; NONE, STREAMED, BUFFERED, BUFFERED_PARTIAL); empty
// means Envoy's default.
type ProcessingMode struct {
	RequestHeader, ResponseHeader   string
	RequestBody, ResponseBody       string
	RequestTrailer, ResponseTrailer string
}

// MutationRules limit the header changes a processor may make.
type MutationRules struct {
	AllowAllRouting, AllowEnvoy, DisallowSystem, DisallowAll, DisallowIsError bool
}

// ExtProcPerRoute switches the HCM's ext_proc filter off for a route, or
// overrides parts of it.
type ExtProcPerRoute struct {
	Disabled  bool
	Overrides *ExtProcOverrides
}

// ExtProcOverrides are what a route may change: the service (with its
// timeout), the failure mode and the processing mode.
type ExtProcOverrides struct {
	// Service, when set, replaces the processor's gRPC service (Cluster,
	// Authority and Timeout are used).
	Service *ExtProc
	// FailOpen, when set, replaces the processor's failure mode.
	FailOpen *bool
	Mode     *ProcessingMode
}

// PathMatchKind says how a route matches the request path.
type PathMatchKind int

const (
	// PathPrefix matches the prefix on segment boundaries ("/a" matches
	// "/a" and "/a/b", not "/ab").
	PathPrefix PathMatchKind = iota
	// PathExact matches the whole path.
	PathExact
	// PathRegex matches the whole path against an RE2 regular expression.
	PathRegex
)

// HeaderMatch is one header condition.
type HeaderMatch struct {
	Name string
	// Kind: "present", "notpresent", "exact", "notexact", "contains",
	// "notcontains", "regex" (RE2, the whole value). The method is the
	// header ":method".
	Kind  string
	Value string
	// IgnoreCase compares exact and contains values (and their
	// negations) case-insensitively.
	IgnoreCase bool
	// TreatMissingAsEmpty matches an absent header as the empty value
	// (a notexact or notcontains condition then matches it).
	TreatMissingAsEmpty bool
}

// QueryParamMatch is one query parameter condition.
type QueryParamMatch struct {
	Name string
	// Kind: "exact", "prefix", "suffix", "contains", "regex" (RE2, the
	// whole value), "present".
	Kind  string
	Value string
	// IgnoreCase compares exact, prefix, suffix and contains values
	// case-insensitively.
	IgnoreCase bool
}

// Route is one Envoy route.
type Route struct {
	PathKind    PathMatchKind
	Path        string
	Headers     []HeaderMatch
	QueryParams []QueryParamMatch

	// HTTPSRedirect answers with a redirect to https instead of proxying.
	HTTPSRedirect bool
	// Redirect, when set, answers with this redirect instead of proxying.
	Redirect *Redirect
	// DirectResponse, when set, answers with this status instead of
	// proxying (e.g. 500 for a rule whose backends are all invalid).
	DirectResponse *DirectResponse
	// PathRewrite changes the path sent upstream.
	PathRewrite *PathRewrite
	// HashPolicies choose the endpoint of RingHash clusters: the hash of
	// the request attributes they name.
	HashPolicies []HashPolicy
	// CookieRewrites change the attributes of the Set-Cookie headers of
	// the responses (a cluster's own replace them for its share).
	CookieRewrites []CookieRewrite
	// Mirrors get a copy of each request (their answers are ignored).
	Mirrors []Mirror

	Clusters        []WeightedCluster
	RequestHeaders  *HeadersPolicy
	ResponseHeaders *HeadersPolicy
	// ResponseTimeout: nil for Envoy's default, 0 for no timeout.
	ResponseTimeout *time.Duration
	IdleTimeout     *time.Duration
	// PerTryTimeout bounds each upstream attempt; nil for none. Unused
	// when Retry is set (it has its own).
	PerTryTimeout *time.Duration
	// Retry retries failed requests; nil for no retries.
	Retry *RetryPolicy
	// CORS, when set, is the route's own CORS policy, in place of its
	// virtual host's (a Gateway API rule's CORS filter).
	CORS *CORSPolicy
	// Websocket allows WebSocket upgrades (Upgrade: websocket) on the
	// route.
	Websocket bool
	// InternalRedirect, when set, makes Envoy follow the upstream's
	// redirects itself.
	InternalRedirect *InternalRedirect
	// IPFilter, when set, lets in or keeps out clients by address: the
	// route's own, or else its virtual host's.
	IPFilter *IPFilter
	// RateLimit, when set, limits the route's requests with a bucket of
	// its own, instead of its virtual host's.
	RateLimit *LocalRateLimit
	// JWTProvider names the host's JWT provider that must verify the
	// route's requests; "" for none.
	JWTProvider string
	// GlobalRateLimits, when set, replace the host's: the route's own
	// descriptors, or none (Disabled).
	GlobalRateLimits *GlobalRateLimits

	// AuthDisabled switches the HCM's ext_authz filter off for this route.
	AuthDisabled bool
	// AuthContext is the merged context sent to the auth server.
	AuthContext map[string]string
	// ExtProc, when set, disables or overrides the HCM's ext_proc filter
	// for this route.
	ExtProc *ExtProcPerRoute
	// Auth, when set, authorizes this route instead of its HCM's
	// authorization (a policy attached to a Gateway API route on a shared
	// plaintext listener): the HCM gets a filter for it, enabled only on
	// the routes that name it. AuthContext is sent to it.
	Auth *ExtAuth
	// Processor, when set, processes this route instead of its HCM's
	// processor, the same way.
	Processor *ExtProc
	// Origins: the HTTPProxy the route is written in.
	Origins Origins

	// Name names the Envoy route: set on every route when extensions are
	// registered (their hooks find routes by it), else only on routes with
	// an Extension. Not unique: a route included through several includes
	// keeps its one name.
	Name string
	// Origin, when set (extensions registered), is the object the route
	// is written in: its Envoy route's metadata says it.
	Origin *RouteOrigin
	// Extension, when set, is what the route's rule gives the extension
	// servers (their PostRouteModify hook).
	Extension *RouteExtension
}

// RouteOrigin is the object, and the part of it, a route is written in,
// as Envoy Gateway's extensions expect to find it in the route's metadata
// (metadata.filter_metadata["envoy-gateway"].resources).
type RouteOrigin struct {
	Kind, Namespace, Name string
	// SectionName is the Gateway API rule's name; "" for an unnamed rule
	// and for HTTPProxy routes.
	SectionName string
}

// RouteExtension is what a route gives the extension servers: where it
// came from and the objects of their kinds its rule references.
type RouteExtension struct {
	// Kind, Namespace and Name are the route's object (an HTTPRoute, a
	// GRPCRoute, or the HTTPProxy whose spec.routes holds it).
	Kind, Namespace, Name string
	// RuleName and RuleIndex are the rule's, in spec.rules (an
	// HTTPProxy's: the route's index in spec.routes, no name).
	RuleName  string
	RuleIndex int
	// Resources are the referenced objects, in the order the rule
	// references them (ExtensionRef filters), then the policies that
	// target the route.
	Resources []ExtensionResource
}

// ExtensionResource is one object of a kind an extension registered.
type ExtensionResource struct {
	Group, Kind string
	// JSON is the object as the API server serves it, without status
	// and metadata.managedFields: the same from a cluster as from files.
	JSON []byte
	// Policy: attached with targetRefs (not an ExtensionRef filter).
	Policy bool
}

// IPFilter lets in only the clients whose address is in one of Rules
// (Allow), or every client but those (deny); the others are answered 403.
type IPFilter struct {
	Allow bool
	Rules []IPRule
}

// IPRule is one address block.
type IPRule struct {
	// CIDR is the block, canonical ("10.0.0.0/8", "2001:db8::/32"; a
	// single address is a /32 or /128).
	CIDR string
	// Remote matches the client's address as Envoy determines it (from
	// X-Forwarded-For where trusted) rather than the network peer's.
	Remote bool
}

// RetryPolicy retries a route's failed requests.
type RetryPolicy struct {
	// RetryOn are Envoy's retry conditions (HTTP and gRPC ones), e.g.
	// "5xx", "reset", "retriable-status-codes", "unavailable".
	RetryOn []string
	// NumRetries is the most retries of a request; 0 disables them.
	NumRetries uint32
	// PerTryTimeout bounds each attempt; nil (or 0) for none.
	PerTryTimeout *time.Duration
	// RetriableStatusCodes are retried under "retriable-status-codes".
	RetriableStatusCodes []uint32
	// Backoff is the least wait before a retry (Envoy's base interval,
	// doubled at each retry up to ten times it); nil for Envoy's 25ms.
	Backoff *time.Duration
}

// InternalRedirect follows upstream redirects inside Envoy.
type InternalRedirect struct {
	// MaxRedirects is how many redirects a request may follow; nil for
	// Envoy's default, 1.
	MaxRedirects *uint32
	// Codes are the statuses followed; 302 only when empty.
	Codes []uint32
	// CrossScheme: "Never" (or ""), "Always", or "SafeOnly" (an HTTPS
	// request may go to HTTP or HTTPS, an HTTP one only to HTTP).
	CrossScheme string
	// DenyRepeatedRoute refuses a redirect to a route the request went
	// through already.
	DenyRepeatedRoute bool
}

// Redirect is a redirect response. Empty fields keep the request's value.
type Redirect struct {
	Scheme   string
	Hostname string
	// Port, 0 for the default: the scheme's when Scheme is set, else the
	// request's.
	Port uint32
	// Path replaces the path, or its matched prefix when PathPrefix.
	Path       *PathRewrite
	StatusCode int // 301, 302, 303, 307 or 308; 0 means 302
}

// PathRewrite replaces the whole path, or the prefix the route matched.
type PathRewrite struct {
	// Prefix: Value replaces the matched prefix (the route matches
	// PathPrefix); otherwise Value replaces the whole path.
	Prefix bool
	Value  string
}

// DirectResponse answers without an upstream.
type DirectResponse struct {
	Status uint32
	Body   string
}

// HashPolicy is one request attribute hashed to choose an endpoint;
// exactly one of Header, QueryParameter, SourceIP and Cookie is set.
type HashPolicy struct {
	Header         string
	QueryParameter string
	SourceIP       bool
	// Cookie, when set, hashes the cookie; a request without it gets one
	// (Path "/", a session cookie).
	Cookie *HashCookie
	// Terminal stops the hashing here when the attribute is present.
	Terminal bool
}

// HashCookie is a cookie hashed, and set on requests that lack it.
type HashCookie struct {
	Name string
	Path string
}

// Mirror sends a copy of requests to a cluster.
type Mirror struct {
	Cluster string
	// Percent of requests mirrored; 100 when unset by the source.
	Percent float64
}

// WeightedCluster is one upstream of a route.
type WeightedCluster struct {
	// Cluster names the cluster; a name with no cluster in the model (an
	// invalid backend) is answered 500.
	Cluster         string
	Weight          uint32
	RequestHeaders  *HeadersPolicy
	ResponseHeaders *HeadersPolicy
	// CookieRewrites, when set, are the cookie rewrites of this cluster's
	// responses: the route's merged with the service's own.
	CookieRewrites []CookieRewrite
}

// CookieRewrite changes the attributes of the Set-Cookie headers of one
// cookie; empty fields (nil Secure) leave the attribute as it is.
type CookieRewrite struct {
	Name   string
	Path   string
	Domain string
	// Secure sets (true) or removes (false) the Secure attribute.
	Secure   *bool
	SameSite string
}

// HeadersPolicy sets, adds and removes headers.
type HeadersPolicy struct {
	// Set replaces a header's values (or adds the header).
	Set []HeaderValue
	// Add appends a value to the header's (a Gateway API header
	// modifier's add).
	Add    []HeaderValue
	Remove []string
	// HostRewrite replaces the :authority (request policies only).
	HostRewrite string
}

// HeaderValue is one header to set.
type HeaderValue struct {
	Name  string
	Value string
}

// Protocol is how Envoy talks to an upstream.
type Protocol string

// The protocols.
const (
	HTTP1 Protocol = ""    // plaintext HTTP/1.1
	H2C   Protocol = "h2c" // plaintext HTTP/2
	H2    Protocol = "h2"  // HTTP/2 over TLS
	TLS   Protocol = "tls" // HTTP/1.1 over TLS
	UDP   Protocol = "udp" // datagrams (a UDPRoute's backends)
)

// Cluster is one upstream cluster.
type Cluster struct {
	Name string
	// Origins are the objects that use the cluster: the HTTPProxies whose
	// routes, authorization or processors send to it, and the
	// ExtensionService it stands for.
	Origins  Origins
	Protocol Protocol
	// Endpoints are the ready endpoints (EDS). Unused when DNSName is set.
	Endpoints []Endpoint
	// DNSName, for ExternalName services, makes a STRICT_DNS cluster.
	DNSName string
	DNSPort uint32
	// DNSLookupFamily restricts DNSName's addresses: "v4", "v6", "auto"
	// (IPv6 first); "" for IPv4 first.
	DNSLookupFamily string
	// DNSHealthPort is the port health checks of DNSName use; 0 for
	// DNSPort.
	DNSHealthPort uint32
	// Validation verifies the upstream's certificate (TLS protocols only).
	Validation *UpstreamValidation
	// SNI sent to TLS upstreams.
	SNI string
	// ClientSecret, when set, names the SDS secret of the client
	// certificate presented to TLS upstreams (a Gateway's
	// spec.tls.backend).
	ClientSecret   string
	ConnectTimeout time.Duration
	// LBPolicy: RoundRobin (the default, also ""), WeightedLeastRequest,
	// Random, or RingHash (consistent hashing of the routes' HashPolicies).
	LBPolicy string
	// SlowStart ramps up the traffic to new endpoints (RoundRobin and
	// WeightedLeastRequest only); nil for none.
	SlowStart *SlowStart
	// IdleTimeout of upstream connections; nil for Envoy's default.
	IdleTimeout *time.Duration
	// CircuitBreakers are the cluster's limits; nil for Envoy's defaults.
	CircuitBreakers *CircuitBreakers
	// HealthCheck, when set, makes Envoy check the endpoints with gRPC
	// health checks.
	HealthCheck *HealthCheck
	// LocalityWeighted makes the endpoints' group weights apply (Envoy's
	// locality weighted load balancing): the weighted backends of a
	// UDPRoute, whose proxy picks one cluster.
	LocalityWeighted bool
	// Extension, when set, is the object of an extension's backend kind
	// the cluster stands for: Portcullis does not know its endpoints (the
	// cluster has none); the owner's PostClusterModify completes it.
	Extension *ExtensionResource
}

// CircuitBreakers are the limits of one Envoy towards a cluster (at the
// default priority); 0 leaves Envoy's default.
type CircuitBreakers struct {
	MaxConnections, MaxPendingRequests, MaxRequests, MaxRetries uint32
	// PerHostMaxConnections limits the connections to each endpoint.
	PerHostMaxConnections uint32
	// RetryBudget, when set, bounds the retries in flight by the requests
	// in flight instead of by MaxRetries (which must then be 0).
	RetryBudget *RetryBudget
}

// RetryBudget lets Percent of the requests in flight (and pending) be
// retries at once, and never fewer than MinConcurrency.
type RetryBudget struct {
	Percent        float64
	MinConcurrency uint32
}

// LBRingHash is the LBPolicy of consistent hashing.
const LBRingHash = "RingHash"

// SlowStart ramps up the share of traffic of a new endpoint over Window:
// from MinWeightPercent of its weight, along a curve shaped by Aggression
// (1 is linear).
type SlowStart struct {
	Window           time.Duration
	Aggression       float64
	MinWeightPercent float64
}

// HealthCheck is an active health check: gRPC (grpc.health.v1), HTTP
// when HTTP is set, or a TCP connection (TCP).
type HealthCheck struct {
	// TCP makes it a connect-only check: an endpoint that accepts a
	// connection is healthy.
	TCP bool
	// ServiceName is the gRPC service checked (gRPC checks only).
	ServiceName string
	// HTTP, when set, makes it an HTTP check (Authority unused).
	HTTP *HTTPHealthCheck
	// Authority is the :authority of the checks.
	Authority                            string
	Interval, Timeout                    time.Duration
	UnhealthyThreshold, HealthyThreshold uint32
}

// HTTPHealthCheck is what an HTTP health check requests and expects.
type HTTPHealthCheck struct {
	Path string
	// Host is the checks' :authority.
	Host string
	// ExpectedStatuses are the healthy statuses; only 200 when empty.
	ExpectedStatuses []StatusRange
}

// StatusRange is the half-open range [Start, End) of HTTP statuses.
type StatusRange struct {
	Start, End int64
}

// Endpoint is one address of a cluster.
type Endpoint struct {
	Address string
	Port    uint32
	// Weight groups endpoints of one backing Service (ExtensionService
	// targets); 0 when unweighted.
	Weight uint32
	// Group distinguishes the backing Services of a cluster.
	Group string
	// HealthPort is the port health checks use; 0 for Port.
	HealthPort uint32
}

// UpstreamValidation verifies an upstream certificate.
type UpstreamValidation struct {
	// CASecret names an SDS validation-context secret.
	CASecret string
	// SubjectName is also the SNI and an ExtensionService's authority.
	SubjectName string
	// SubjectNames are the DNS SANs accepted, one of which the certificate
	// must present; the first is SubjectName. Nil (and no SubjectURIs):
	// SubjectName alone.
	SubjectNames []string
	// SubjectURIs are the URI SANs accepted (a BackendTLSPolicy's), as
	// alternatives to SubjectNames.
	SubjectURIs []string
}

// Secret is an SDS secret: a certificate with key, or a CA bundle.
type Secret struct {
	Name string
	// Origins are the objects that use the secret: the HTTPProxies serving
	// the certificate (the fallback certificate's: those that enable it) or
	// validating with the CA, the ExtensionServices validating with it.
	Origins Origins
	Cert    []byte // PEM chain (server certificates)
	Key     []byte // PEM key (server certificates)
	CA      []byte // PEM bundle (validation contexts)
	// CRL are the PEM revocation lists a client validation context checks
	// certificates against (all of the chain's unless OnlyVerifyLeafCRL).
	CRL               []byte
	OnlyVerifyLeafCRL bool
}
