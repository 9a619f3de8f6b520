// Package config reads the control plane's configuration file: the settings
// that apply to every virtual host (global external authorization and
// global external processing) rather than to one HTTPProxy.
//
// Decoding is strict: an unknown field, a value of the wrong type or a value
// that cannot work is an error naming the file and the field, so that a
// typo never silently turns a protection off.
package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/apicheck"
)

// Config is the whole configuration file.
type Config struct {
	// GlobalExtAuth is the external authorization of the HTTP listener's
	// virtual hosts, the fallback-certificate chain and the HTTPS virtual
	// hosts without an authorization of their own.
	GlobalExtAuth *GlobalExtAuth `json:"globalExtAuth,omitempty"`
	// GlobalExtProc is the external processing of every virtual host that
	// does not configure (or disable) its own. Same type as
	// HTTPProxy spec.virtualhost.extProc.
	GlobalExtProc *contourv1.ExternalProcessor `json:"globalExtProc,omitempty"`
	// RateLimitService is the global rate limit service the
	// HTTPProxies' rateLimitPolicy.global descriptors are sent to.
	RateLimitService *RateLimitService `json:"rateLimitService,omitempty"`
	// Limits bound what one root HTTPProxy may expand to through its
	// includes.
	Limits Limits `json:"limits,omitempty"`
	// Gateway configures the Gateway API front door.
	Gateway Gateway `json:"gateway,omitempty"`
	// Extensions are the extension servers whose hooks serve calls on
	// every rebuild (docs/extensions.md), in the order their hooks chain,
	// checked and turned into the runners' registrations by
	// extension.FromConfig (this package cannot import the runner: the
	// builder imports this one). Read at startup: changing them takes a
	// restart.
	Extensions []Extension `json:"extensions,omitempty"`
}

// Extension registers the extension server: extension.Registration as the
// file spells it (durations as strings such as "1s", hooks by name).
type Extension struct {
	// Name names the extension in logs, metrics and conditions; unique.
	Name string `json:"name"`
	// Address is the extension's gRPC target, host:port; or
	Address string `json:"address,omitempty"`
	// ExtensionService, "namespace/name", reaches the extension at the
	// endpoints of that ExtensionService, followed as they change.
	ExtensionService string `json:"extensionService,omitempty"`
	// TLS, when set, connects over TLS; without it, plaintext.
	TLS *ExtensionTLS `json:"tls,omitempty"`
	// Hooks are the hooks the extension answers (extension.Hooks).
	Hooks []string `json:"hooks"`
	// Timeout is the deadline of each call (default 1s).
	Timeout string `json:"timeout,omitempty"`
	// FailurePolicy is Closed (the default) or Open.
	FailurePolicy string `json:"failurePolicy,omitempty"`
	// MaxMessageSize bounds a request and an answer, in bytes (default
	// 64 MiB).
	MaxMessageSize int `json:"maxMessageSize,omitempty"`
	// PhaseBudget bounds all the calls of one rebuild (default 10s); at
	// least Timeout.
	PhaseBudget string `json:"phaseBudget,omitempty"`
	// MaxConcurrency bounds the calls in flight at once (default 8).
	MaxConcurrency int `json:"maxConcurrency,omitempty"`
	// Resources are the kinds HTTPRoute rules reference with an
	// ExtensionRef filter: their routes go through PostRouteModify.
	Resources []GroupVersionKind `json:"resources,omitempty"`
	// BackendResources are the kinds HTTPRoute rules reference as a
	// backendRef: their clusters go through PostClusterModify.
	BackendResources []GroupVersionKind `json:"backendResources,omitempty"`
	// PolicyResources are the kinds that attach to Gateways, routes and
	// HTTPProxies with spec.targetRefs: PostRouteModify receives those
	// targeting a route (or the HTTPProxy it is written in).
	PolicyResources []GroupVersionKind `json:"policyResources,omitempty"`
	// Dialect is the contract the extension serves: Portcullis (the
	// default: portcullis.extension.v1alpha1.ExtensionServer) or
	// EnvoyGateway (envoygateway.extension.EnvoyGatewayExtension, as Envoy
	// Gateway calls it).
	Dialect string `json:"dialect,omitempty"`
	// Translation says which resource types PostTranslateModify sends to
	// an EnvoyGateway extension and takes back, as Envoy Gateway's
	// extensionManager.hooks.xdsTranslator.translation does.
	Translation *ExtensionTranslation `json:"translation,omitempty"`
	// AllowLocalEndpoints lets the clusters the extension adds or changes
	// reach the host itself: loopback, link-local and the host's own
	// addresses, Unix sockets (refused by default).
	AllowLocalEndpoints bool `json:"allowLocalEndpoints,omitempty"`
	// MayRemoveAll lets the extension's answers leave no listener or no
	// virtual host: Envoy then serves nothing (refused by default).
	MayRemoveAll bool `json:"mayRemoveAll,omitempty"`
	// Retry retries a failed call within its timeout (gRPC's retry
	// policy); by default only under the EnvoyGateway dialect, as Envoy
	// Gateway does.
	Retry *ExtensionRetry `json:"retry,omitempty"`
}

// ExtensionRetry is Envoy Gateway's per-call retry configuration.
type ExtensionRetry struct {
	// MaxAttempts counts the first call: 2 to 5 (default 4).
	MaxAttempts int `json:"maxAttempts,omitempty"`
	// InitialBackoff and MaxBackoff are durations (default 100ms and 1s).
	InitialBackoff string `json:"initialBackoff,omitempty"`
	MaxBackoff     string `json:"maxBackoff,omitempty"`
	// BackoffMultiplier grows the backoff (default 2).
	BackoffMultiplier float64 `json:"backoffMultiplier,omitempty"`
	// RetryableStatusCodes are gRPC codes by name (default [UNAVAILABLE]).
	RetryableStatusCodes []string `json:"retryableStatusCodes,omitempty"`
}

// ExtensionTranslation is Envoy Gateway's translation hook configuration:
// by default clusters and secrets are included, listeners and routes not.
type ExtensionTranslation struct {
	Listener *TranslationInclude `json:"listener,omitempty"`
	Route    *TranslationInclude `json:"route,omitempty"`
	Cluster  *TranslationInclude `json:"cluster,omitempty"`
	Secret   *TranslationInclude `json:"secret,omitempty"`
}

// TranslationInclude includes a resource type, or not; unset is the
// type's default.
type TranslationInclude struct {
	IncludeAll *bool `json:"includeAll,omitempty"`
}

// GroupVersionKind names a kind an extension owns; the version is the one
// the control plane watches.
type GroupVersionKind struct {
	Group   string `json:"group"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
}

func (g GroupVersionKind) String() string { return g.Group + "/" + g.Version + ", Kind=" + g.Kind }

// ExtensionKinds are every kind of every extension, in order (duplicates
// are the registration's error, not removed here).
func (c *Config) ExtensionKinds() []GroupVersionKind {
	var out []GroupVersionKind
	for _, e := range c.Extensions {
		out = append(out, e.Resources...)
		out = append(out, e.BackendResources...)
		out = append(out, e.PolicyResources...)
	}
	return out
}

// ExtensionTLS is how the control plane connects to the extension over
// TLS.
type ExtensionTLS struct {
	// CAFile is a PEM bundle of the CAs of the extension's certificate
	// (default: the system's roots).
	CAFile string `json:"caFile,omitempty"`
	// CertFile and KeyFile are the control plane's client certificate and
	// key (PEM), both or neither.
	CertFile string `json:"certFile,omitempty"`
	KeyFile  string `json:"keyFile,omitempty"`
	// ServerName is the name the extension's certificate must have
	// (default: the host of address).
	ServerName string `json:"serverName,omitempty"`
	// CASecret ("namespace/name", key ca.crt) and ClientCertificateSecret
	// (a kubernetes.io/tls Secret) take them from Secrets instead of files,
	// followed as they change (Envoy Gateway's certificateRef and
	// clientCertificateRef).
	CASecret                string `json:"caSecret,omitempty"`
	ClientCertificateSecret string `json:"clientCertificateSecret,omitempty"`
}

// Durations are the extension's timeout and phase budget (0 when unset),
// and what is wrong with them, each naming its field.
// where is the field path of the extension's fields (extensions[i]).
func (e *Extension) Durations(where string) (timeout, phaseBudget time.Duration, errs []string) {
	parse := func(field, v string) time.Duration {
		if v == "" {
			return 0
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: must be a duration such as 1s or 500ms, got %q", field, v))
		}
		return d
	}
	return parse(where+".timeout", e.Timeout), parse(where+".phaseBudget", e.PhaseBudget), errs
}

// Gateway configures the Gateway API front door.
type Gateway struct {
	// ControllerName is the spec.controllerName of the GatewayClasses
	// this control plane serves (DefaultGatewayControllerName when empty).
	ControllerName string `json:"controllerName,omitempty"`
	// Addresses are where clients reach Envoy (IP addresses or host
	// names), reported in every Gateway's status.addresses and every
	// valid root HTTPProxy's status.loadBalancer.ingress: one Envoy serves
	// both APIs, so one setting says where it is.
	Addresses []string `json:"addresses,omitempty"`
	// EnvoyService ("namespace/name") is the Service in front of Envoy:
	// its load balancer's addresses (else its cluster IPs) are reported
	// after Addresses, in the same places.
	EnvoyService string `json:"envoyService,omitempty"`
	// ServicePerGateway gives each Gateway its own Envoy ports and its own
	// Service in front of Envoy (in EnvoyService's namespace, with its
	// type and selector), whose addresses are that Gateway's: Gateways are
	// isolated from each other (each its own address, any listener
	// hostnames and ports). Needs EnvoyService; excludes Addresses.
	ServicePerGateway bool `json:"servicePerGateway,omitempty"`
	// ExperimentalChannel says the cluster's Gateway API CRDs are the
	// experimental channel's: the GatewayClass then also claims the
	// features whose fields only those CRDs have (HTTPRoute retry). With
	// the standard CRDs the API server prunes those fields, and a claim
	// would fail every test of them.
	ExperimentalChannel bool `json:"experimentalChannel,omitempty"`
	// UDPSessionIdleTimeout closes a UDP listener's session (a client's
	// source address and port, and its backend endpoint) after this long
	// without a datagram either way: a duration from 1s to 1h, 60s when
	// empty (DefaultUDPSessionIdleTimeout). An answer later than it is
	// dropped.
	UDPSessionIdleTimeout string `json:"udpSessionIdleTimeout,omitempty"`
}

// DefaultUDPSessionIdleTimeout is gateway.udpSessionIdleTimeout's
// default, Envoy's own.
const DefaultUDPSessionIdleTimeout = time.Minute

// The bounds of gateway.udpSessionIdleTimeout: a session outlives a slow
// answer, and a client gone does not hold Envoy's session for long.
const (
	minUDPSessionIdleTimeout = time.Second
	maxUDPSessionIdleTimeout = time.Hour
)

// UDPIdleTimeout is gateway.udpSessionIdleTimeout in force (the default
// when empty or invalid: Check refuses an invalid one).
func (g Gateway) UDPIdleTimeout() time.Duration {
	d, err := time.ParseDuration(g.UDPSessionIdleTimeout)
	if err != nil || d < minUDPSessionIdleTimeout || d > maxUDPSessionIdleTimeout {
		return DefaultUDPSessionIdleTimeout
	}
	return d
}

// DefaultGatewayControllerName is the controller name of the GatewayClasses
// served when the configuration names none.
const DefaultGatewayControllerName = "portcullis.dev/gateway-controller"

// Controller is the controller name in force.
func (g Gateway) Controller() string {
	if g.ControllerName == "" {
		return DefaultGatewayControllerName
	}
	return g.ControllerName
}

// controllerNamePattern is the Gateway API's GatewayController format: a
// domain-prefixed path.
var controllerNamePattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/[A-Za-z0-9/\-._~%!$&'()*+,;=:]+$`)

// Limits bound the include expansion of one root HTTPProxy: an HTTPProxy
// included twice under different conditions is built twice, so a chain of
// tiny HTTPProxies each including the next twice expands exponentially. A
// root past a bound is not served (see the builder). Zero means the
// default.
type Limits struct {
	// MaxIncludeDepth is the most HTTPProxies on an include path below
	// the root.
	MaxIncludeDepth int `json:"maxIncludeDepth,omitempty"`
	// MaxRoutesPerVirtualHost is the most routes built for one root: its
	// own and those of every HTTPProxy it includes, once per include path
	// (per distinct conditions) that reaches them.
	MaxRoutesPerVirtualHost int `json:"maxRoutesPerVirtualHost,omitempty"`
	// MaxIncludesPerRoot is the most include entries followed while
	// building one root, counted the same way.
	MaxIncludesPerRoot int `json:"maxIncludesPerRoot,omitempty"`
}

// Default limits: far above what hand-written configurations use (a few
// levels, hundreds of routes), far below what exhausts the control plane
// (millions of routes).
const (
	DefaultMaxIncludeDepth         = 16
	DefaultMaxRoutesPerVirtualHost = 10000
	DefaultMaxIncludesPerRoot      = 10000
)

// WithDefaults returns l with the defaults in place of zeros.
func (l Limits) WithDefaults() Limits {
	def := func(v, d int) int {
		if v == 0 {
			return d
		}
		return v
	}
	return Limits{
		MaxIncludeDepth:         def(l.MaxIncludeDepth, DefaultMaxIncludeDepth),
		MaxRoutesPerVirtualHost: def(l.MaxRoutesPerVirtualHost, DefaultMaxRoutesPerVirtualHost),
		MaxIncludesPerRoot:      def(l.MaxIncludesPerRoot, DefaultMaxIncludesPerRoot),
	}
}

// GlobalExtAuth is the global external authorization.
type GlobalExtAuth struct {
	// Disabled turns global authorization off, explicitly, and excludes
	// every other field: the only way a reload may remove a global
	// authorization in force (a file that lost the section, or
	// "globalExtAuth:" with nothing under it, is refused: see Watch).
	// Spelt as globalExtProc's disabled.
	Disabled bool `json:"disabled,omitempty"`
	// ExtensionService is the authorization server, "namespace/name".
	ExtensionService string `json:"extensionService,omitempty"`
	// FailOpen lets requests through when the server cannot be reached.
	FailOpen bool `json:"failOpen,omitempty"`
	// AuthPolicy is the default policy (disabled, context) that virtual
	// hosts and routes refine.
	AuthPolicy *contourv1.AuthorizationPolicy `json:"authPolicy,omitempty"`
	// ResponseTimeout is how long Envoy waits for a check (see
	// ParseTimeout).
	ResponseTimeout string `json:"responseTimeout,omitempty"`
	// WithRequestBody sends (part of) the request body with the check.
	WithRequestBody *contourv1.AuthorizationServerBufferSettings `json:"withRequestBody,omitempty"`
	// ServiceAPIType is the server's protocol, grpc (the default) or
	// http; Contour's name for an HTTPProxy's serviceType.
	ServiceAPIType contourv1.AuthorizationServiceType `json:"serviceAPIType,omitempty"`
	// HTTPServerSettings configures the requests to an HTTP server.
	HTTPServerSettings *contourv1.HTTPAuthorizationServerSettings `json:"httpSettings,omitempty"`
	// OptOut says whether HTTPProxies and Gateway API policies may switch
	// the global authorization off for their hosts and routes: allowed
	// (the default, Contour's behaviour) or forbidden (such an opt-out is
	// refused, its routes stay authorized, and its status says so).
	OptOut OptOut `json:"optOut,omitempty"`
}

// OptOut is globalExtAuth.optOut.
type OptOut string

// The values of globalExtAuth.optOut.
const (
	OptOutAllowed   OptOut = "allowed"
	OptOutForbidden OptOut = "forbidden"
)

// OptOutForbidden reports whether the global authorization cannot be
// switched off (g may be nil: no global authorization, nothing to
// forbid).
func (g *GlobalExtAuth) OptOutForbidden() bool {
	return g != nil && g.OptOut == OptOutForbidden
}

// RateLimitService is the global rate limit service (Envoy's ratelimit
// filter, the gRPC rate limit protocol), as Contour's.
type RateLimitService struct {
	// ExtensionService is the rate limit service, "namespace/name".
	ExtensionService string `json:"extensionService"`
	// Domain names the service's configuration the descriptors are
	// counted against.
	Domain string `json:"domain"`
	// FailOpen lets requests through when the service cannot be reached
	// or fails; by default they are answered 500.
	FailOpen bool `json:"failOpen,omitempty"`
	// EnableXRateLimitHeaders adds the X-RateLimit-* headers (draft 03)
	// to the responses.
	EnableXRateLimitHeaders bool `json:"enableXRateLimitHeaders,omitempty"`
	// EnableResourceExhaustedCode answers limited gRPC requests
	// RESOURCE_EXHAUSTED instead of UNAVAILABLE.
	EnableResourceExhaustedCode bool `json:"enableResourceExhaustedCode,omitempty"`
	// DefaultGlobalRateLimitPolicy applies to every virtual host without
	// a global policy of its own (or that disables it).
	DefaultGlobalRateLimitPolicy *contourv1.GlobalRateLimitPolicy `json:"defaultGlobalRateLimitPolicy,omitempty"`
}

// Ref is the Namespace and Name of the ExtensionService (valid after
// Parse).
func (r *RateLimitService) Ref() (namespace, name string) {
	ns, n, _ := strings.Cut(r.ExtensionService, "/")
	return ns, n
}

// Ref is the Namespace and Name of the ExtensionService (valid after
// Parse).
func (g *GlobalExtAuth) Ref() (namespace, name string) {
	ns, n, _ := strings.Cut(g.ExtensionService, "/")
	return ns, n
}

// Load reads and validates a configuration file. An empty path is the
// empty configuration.
func Load(path string) (*Config, error) {
	if path == "" {
		return &Config{}, nil
	}
	// The path is the operator's own (a flag), not a request's.
	b, err := os.ReadFile(filepath.Clean(path))
	if err != nil {
		return nil, err
	}
	return Parse(b, path)
}

// Parse decodes and validates a configuration; source names it in errors.
func Parse(b []byte, source string) (*Config, error) {
	j, err := yaml.YAMLToJSON(b)
	if err != nil {
		return nil, fmt.Errorf("%s: not valid YAML: %v", source, err)
	}
	c := &Config{}
	if len(bytes.TrimSpace(j)) == 0 || string(bytes.TrimSpace(j)) == "null" {
		return c, nil
	}
	var generic any
	if err := json.Unmarshal(j, &generic); err != nil {
		return nil, fmt.Errorf("%s: %v", source, err)
	}
	if _, ok := generic.(map[string]any); !ok {
		return nil, fmt.Errorf("%s: the configuration must be a mapping of fields (globalExtAuth, globalExtProc, limits, gateway, extensions)", source)
	}
	if errs := unknownFields(generic, reflect.TypeFor[Config](), ""); len(errs) > 0 {
		return nil, fmt.Errorf("%s: %s", source, strings.Join(errs, "; "))
	}
	// The elements of extensions first, one by one: json's type errors
	// do not say which element.
	if exts, ok := generic.(map[string]any)["extensions"].([]any); ok {
		for i, e := range exts {
			b, _ := json.Marshal(e)
			if err := json.Unmarshal(b, &Extension{}); err != nil {
				return nil, typeError(source, fmt.Sprintf("extensions[%d].", i), err)
			}
		}
	}
	if err := json.Unmarshal(j, c); err != nil {
		return nil, typeError(source, "", err)
	}
	if errs := c.validate(); len(errs) > 0 {
		return nil, fmt.Errorf("%s: %s", source, strings.Join(errs, "; "))
	}
	return c, nil
}

// typeError is a decoding error naming its field, below prefix.
func typeError(source, prefix string, err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Errorf("%s: %s%s: must be of type %s, got %s", source, prefix, te.Field, typeName(te.Type), te.Value)
	}
	return fmt.Errorf("%s: %s%v", source, prefix, err)
}

func typeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Bool:
		return "boolean"
	case reflect.String:
		return "string"
	case reflect.Map, reflect.Struct:
		return "mapping"
	case reflect.Uint32, reflect.Int, reflect.Int64, reflect.Uint64:
		return "integer"
	}
	return t.String()
}

// unknownFields walks a decoded document along a Go type and names every
// field the type does not have, with its path.
func unknownFields(v any, t reflect.Type, path string) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if l, ok := v.([]any); ok && t.Kind() == reflect.Slice {
		var out []string
		for i, e := range l {
			out = append(out, unknownFields(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i))...)
		}
		return out
	}
	m, ok := v.(map[string]any)
	if !ok || t.Kind() != reflect.Struct {
		return nil
	}
	fields := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		fields[name] = f.Type
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []string
	for _, k := range keys {
		p := k
		if path != "" {
			p = path + "." + k
		}
		ft, ok := fields[k]
		if !ok {
			known := make([]string, 0, len(fields))
			for n := range fields {
				known = append(known, n)
			}
			sort.Strings(known)
			out = append(out, fmt.Sprintf("%s: unknown field (known fields: %s)", p, strings.Join(known, ", ")))
			continue
		}
		out = append(out, unknownFields(m[k], ft, p)...)
	}
	return out
}

// validate checks what decoding cannot: formats, enums and ranges. Whether
// the ExtensionServices exist is the builder's business (they may appear
// later). Each section is checked in file order, so the errors keep it.
func (c *Config) validate() []string {
	var p problems
	p.globalExtAuth(c.GlobalExtAuth)
	p.rateLimitService(c.RateLimitService)
	p.limits(c.Limits)
	p.gateway(c.Gateway)
	p.globalExtProc(c.GlobalExtProc)
	// The rest of the extension section is checked with the hook
	// runner's own rules (extension.FromConfig) where it is used.
	for i := range c.Extensions {
		_, _, derrs := c.Extensions[i].Durations(fmt.Sprintf("extensions[%d]", i))
		p = append(p, derrs...)
	}
	return p
}

// problems collects validation errors, each "field: message".
type problems []string

func (p *problems) add(field, format string, args ...any) {
	*p = append(*p, field+": "+fmt.Sprintf(format, args...))
}

// isNamespacedName tells whether s is "namespace/name", both non-empty.
func isNamespacedName(s string) bool {
	ns, name, ok := strings.Cut(s, "/")
	return ok && ns != "" && name != "" && !strings.Contains(name, "/")
}

// extensionServiceRef checks a required "namespace/name" of an
// ExtensionService.
func (p *problems) extensionServiceRef(field, ref string) {
	switch {
	case ref == "":
		p.add(field, "is required (namespace/name of an ExtensionService)")
	case !isNamespacedName(ref):
		p.add(field, "must be namespace/name, got %q", ref)
	}
}

func (p *problems) globalExtAuth(g *GlobalExtAuth) {
	if g == nil {
		return
	}
	if g.Disabled {
		if !reflect.DeepEqual(*g, GlobalExtAuth{Disabled: true}) {
			p.add("globalExtAuth.disabled", "excludes every other field (disabled: true turns global authorization off)")
		}
		return
	}
	p.extensionServiceRef("globalExtAuth.extensionService", g.ExtensionService)
	if _, err := apicheck.ParseTimeout(g.ResponseTimeout); err != nil {
		p.add("globalExtAuth.responseTimeout", "%v", err)
	}
	for _, e := range apicheck.CheckAuthServiceType("serviceAPIType", g.ServiceAPIType, g.HTTPServerSettings, g.WithRequestBody, g.AuthPolicy) {
		*p = append(*p, "globalExtAuth."+e)
	}
	if g.OptOut != "" && g.OptOut != OptOutAllowed && g.OptOut != OptOutForbidden {
		p.add("globalExtAuth.optOut", "must be %s or %s, got %q", OptOutAllowed, OptOutForbidden, g.OptOut)
	}
	if g.OptOut == OptOutForbidden && g.AuthPolicy != nil && g.AuthPolicy.Disabled {
		p.add("globalExtAuth.optOut", "forbidden contradicts authPolicy.disabled: true (off unless hosts and routes opt in): no host or route could switch it off, nor would it be on")
	}
	if w := g.WithRequestBody; w != nil && w.MaxRequestBytes == 0 {
		// The API's default, applied here since no API server does it.
		w.MaxRequestBytes = apicheck.DefaultMaxRequestBytes
	}
}

func (p *problems) rateLimitService(r *RateLimitService) {
	if r == nil {
		return
	}
	p.extensionServiceRef("rateLimitService.extensionService", r.ExtensionService)
	if r.Domain == "" {
		p.add("rateLimitService.domain", "is required (the rate limit service's domain of the descriptors)")
	}
	// The descriptors themselves are checked where they apply, with
	// the hosts' own (internal/builder).
	switch d := r.DefaultGlobalRateLimitPolicy; {
	case d == nil:
	case d.Disabled && len(d.Descriptors) > 0:
		p.add("rateLimitService.defaultGlobalRateLimitPolicy", "disabled and descriptors cannot both be set")
	case !d.Disabled && len(d.Descriptors) == 0:
		p.add("rateLimitService.defaultGlobalRateLimitPolicy", "set descriptors (or disabled: true)")
	}
}

func (p *problems) limits(l Limits) {
	for _, f := range []struct {
		field string
		v     int
	}{
		{"limits.maxIncludeDepth", l.MaxIncludeDepth},
		{"limits.maxRoutesPerVirtualHost", l.MaxRoutesPerVirtualHost},
		{"limits.maxIncludesPerRoot", l.MaxIncludesPerRoot},
	} {
		if f.v < 0 {
			p.add(f.field, "must be at least 1 (or 0 for the default), got %d", f.v)
		}
	}
}

func (p *problems) gateway(g Gateway) {
	if n := g.ControllerName; n != "" && (len(n) > 253 || !controllerNamePattern.MatchString(n)) {
		p.add("gateway.controllerName", "must be a domain-prefixed path such as %s (at most 253 characters), got %q", DefaultGatewayControllerName, n)
	}
	for i, a := range g.Addresses {
		if net.ParseIP(a) == nil && len(validation.IsDNS1123Subdomain(a)) > 0 {
			p.add(fmt.Sprintf("gateway.addresses[%d]", i), "must be an IP address or a host name, got %q", a)
		}
	}
	if s := g.EnvoyService; s != "" && !isNamespacedName(s) {
		p.add("gateway.envoyService", "must be namespace/name, got %q", s)
	}
	p.udpIdleTimeout(g.UDPSessionIdleTimeout)
	if g.ServicePerGateway {
		if g.EnvoyService == "" {
			p.add("gateway.servicePerGateway", "needs gateway.envoyService (the Service whose namespace, type and selector each Gateway's Service takes)")
		}
		if len(g.Addresses) > 0 {
			p.add("gateway.servicePerGateway", "excludes gateway.addresses: each Gateway's addresses are its own Service's")
		}
	}
}

// udpIdleTimeout checks gateway.udpSessionIdleTimeout (v, "" for the
// default).
func (p *problems) udpIdleTimeout(v string) {
	if v == "" {
		return
	}
	if d, err := time.ParseDuration(v); err != nil || d < minUDPSessionIdleTimeout || d > maxUDPSessionIdleTimeout {
		p.add("gateway.udpSessionIdleTimeout", "must be a duration from %v to %v such as 30s, got %q", minUDPSessionIdleTimeout, maxUDPSessionIdleTimeout, v)
	}
}

func (p *problems) globalExtProc(e *contourv1.ExternalProcessor) {
	if e == nil {
		return
	}
	*p = append(*p, apicheck.CheckExtProc(e.Processor, "globalExtProc.processor", true)...)
	if pr := e.Processor; pr != nil && pr.GRPCService != nil && pr.GRPCService.ExtensionServiceRef.Namespace == "" {
		p.add("globalExtProc.processor.grpcService.extensionRef.namespace", "is required (the configuration file has no namespace of its own)")
	}
	if !e.Disabled && e.Processor == nil {
		p.add("globalExtProc", "set processor (or disabled: true)")
	}
}
