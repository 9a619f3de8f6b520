// Package extension calls the extension server's hooks
// (docs/design/extension-server-hooks.md) on the translator's output:
// Runner.Apply takes the Resources of one translation and returns them as
// the extension changed them, with the failures of the hooks, validated,
// under the registration's failure policy.
package extension

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/resolver/manual"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// Hook names one hook of the contract, as its RPC is named.
type Hook string

// The hooks.
const (
	HookPostRouteModify        Hook = "PostRouteModify"
	HookPostVirtualHostModify  Hook = "PostVirtualHostModify"
	HookPostHTTPListenerModify Hook = "PostHTTPListenerModify"
	HookPostTranslateInsert    Hook = "PostTranslateInsert"
	HookPostTranslateModify    Hook = "PostTranslateModify"
	HookPostClusterModify      Hook = "PostClusterModify"
	HookPostEndpointsModify    Hook = "PostEndpointsModify"
)

// Hooks are every hook, in the order Apply runs them.
var Hooks = []Hook{
	HookPostTranslateInsert, HookPostClusterModify, HookPostEndpointsModify, HookPostRouteModify, HookPostVirtualHostModify,
	HookPostHTTPListenerModify, HookPostTranslateModify,
}

// Dialect is the wire contract an extension serves.
type Dialect string

const (
	// DialectPortcullis is portcullis.extension.v1alpha1.ExtensionServer
	// (extension/proto): every hook, with each resource's origins.
	DialectPortcullis Dialect = "Portcullis"
	// DialectEnvoyGateway is envoygateway.extension.EnvoyGatewayExtension,
	// the contract of Envoy Gateway's extension manager, called by its
	// rules (envoygateway.go).
	DialectEnvoyGateway Dialect = "EnvoyGateway"
)

// Translation is what PostTranslateModify sends an EnvoyGateway extension,
// and replaces with its answer, by resource type (Envoy Gateway's
// translation settings).
type Translation struct {
	Listeners, Routes, Clusters, Secrets bool
}

// DefaultTranslation is Envoy Gateway's: clusters and secrets.
var DefaultTranslation = Translation{Clusters: true, Secrets: true}

// FailurePolicy says what a failed hook does to the configuration.
type FailurePolicy string

const (
	// FailClosed keeps the last good configuration on any failure (Apply
	// returns no Resources: do not publish).
	FailClosed FailurePolicy = "Closed"
	// FailOpen skips the failed hook's change, keeping its input, and
	// applies the rest.
	FailOpen FailurePolicy = "Open"
)

// Defaults of a Registration's unset fields.
const (
	DefaultTimeout        = time.Second
	DefaultPhaseBudget    = 10 * time.Second
	DefaultMaxMessageSize = 64 << 20
	DefaultMaxConcurrency = 8
)

// TLS is how the control plane connects to the extension over TLS.
type TLS struct {
	// CAFile is a PEM bundle of the CAs that sign the extension's
	// certificate. Empty: the system's roots.
	CAFile string
	// CertFile and KeyFile are the control plane's client certificate and
	// key (PEM), for an extension that asks for one; both or neither.
	CertFile, KeyFile string
	// ServerName is the name the extension's certificate must have; empty:
	// the host of Address.
	ServerName string
	// CASecret and ClientSecret ("namespace/name") take the CAs (ca.crt)
	// and the client certificate (tls.crt, tls.key) from Secrets instead
	// of files, followed as they change (Runner.SetSecrets).
	CASecret, ClientSecret string
}

// Registration is the extension of the configuration file: where it is,
// which hooks it answers and how it is called.
type Registration struct {
	// Name names the extension in logs, metrics and conditions: unique
	// among the registrations.
	Name string
	// Where is where the registration was written, for its errors (e.g.
	// "extensions[0]"); empty: "extension".
	Where string
	// Address is the extension's gRPC target (host:port, or any target
	// grpc.NewClient accepts); or
	Address string
	// Service, "namespace/name", is an ExtensionService whose endpoints
	// serve the extension: the caller feeds them (Runner.SetEndpoints)
	// from each build, and calls go to them as they change.
	Service string
	// TLS, when set, is used to connect; nil connects in plaintext.
	TLS *TLS
	// Hooks are the hooks the extension subscribes to: a set (no
	// duplicates). The others are never called.
	Hooks []Hook
	// Timeout is the deadline of each call; 0 is DefaultTimeout.
	Timeout time.Duration
	// FailurePolicy is Closed (the default, for "") or Open.
	FailurePolicy FailurePolicy
	// MaxMessageSize bounds a request and an answer, in bytes
	// (PostTranslateModify sends the whole configuration); 0 is
	// DefaultMaxMessageSize.
	MaxMessageSize int
	// PhaseBudget bounds all the hook calls of one Apply (one rebuild): a
	// hung extension never holds a rebuild longer. 0 is
	// DefaultPhaseBudget; it may not be shorter than Timeout.
	PhaseBudget time.Duration
	// MaxConcurrency bounds the calls in flight at once; 0 is
	// DefaultMaxConcurrency.
	MaxConcurrency int
	// Resources are the kinds HTTPRoute rules reference with ExtensionRef
	// filters (sent to PostRouteModify); BackendResources those they
	// reference as backends (PostClusterModify); PolicyResources those
	// that attach with spec.targetRefs (sent to PostRouteModify with the
	// routes they target). The version is the one watched; a kind is
	// known by group and kind.
	Resources, BackendResources, PolicyResources []schema.GroupVersionKind
	// Dialect is the contract the extension serves; "" is
	// DialectPortcullis.
	Dialect Dialect
	// Translation is the EnvoyGateway dialect's PostTranslateModify
	// selection; nil is DefaultTranslation.
	Translation *Translation
	// AllowLocalEndpoints lets the clusters the extension adds or changes
	// reach the host itself (loopback, link-local, its own addresses, Unix
	// sockets): refused otherwise (guard.CheckEndpoints).
	AllowLocalEndpoints bool
	// MayRemoveAll: the extension's answers may leave no listener or no
	// virtual host (Envoy then serves nothing); refused otherwise.
	MayRemoveAll bool
	// Retry, when set, retries failed calls within their timeout; nil is
	// none under the Portcullis dialect, DefaultRetry under EnvoyGateway.
	Retry *Retry
}

// Kinds are the registration's kinds, all three lists.
func (r Registration) Kinds() []schema.GroupVersionKind {
	return slices.Concat(r.Resources, r.BackendResources, r.PolicyResources)
}

// Owns reports whether gk is one of the registration's kinds.
func (r Registration) Owns(gk schema.GroupKind) bool {
	return slices.ContainsFunc(r.Kinds(), func(k schema.GroupVersionKind) bool { return k.GroupKind() == gk })
}

// ourGroups are the API groups Portcullis reads itself: no extension may
// own one of their kinds.
var ourGroups = []string{"", "projectcontour.io", "gateway.networking.k8s.io", "gateway.portcullis.dev", "discovery.k8s.io"}

// ourKinds are the kinds of the objects Portcullis reports on.
var ourKinds = []string{
	objects.KindHTTPProxy, objects.KindExtensionService, objects.KindTLSCertificateDelegation, objects.KindGatewayClass,
	objects.KindGateway, objects.KindHTTPRoute, objects.KindGRPCRoute, objects.KindTLSRoute, objects.KindTCPRoute, objects.KindUDPRoute, objects.KindListenerSet, objects.KindReferenceGrant, objects.KindBackendTLSPolicy,
	objects.KindExtAuthPolicy, objects.KindExtProcPolicy,
}

// Subscribed reports whether the extension answers h.
func (r *Registration) Subscribed(h Hook) bool { return slices.Contains(r.Hooks, h) }

// Validate says what is wrong with the registration, every problem at
// once, each naming its field; nil when it is usable.
func (r *Registration) Validate() error {
	w := r.where()
	errs := r.validateConnection(w)
	errs = append(errs, r.validateHooks(w)...)
	errs = append(errs, r.validateLimits(w)...)
	errs = append(errs, r.validateKinds(w)...)
	errs = append(errs, r.validateDialect(w)...)
	if r.Retry != nil {
		errs = append(errs, r.Retry.validate(w)...)
	}
	return errors.Join(errs...)
}

// validateConnection checks the name and how the extension is reached.
func (r *Registration) validateConnection(w string) []error {
	var errs []error
	if r.Name == "" {
		errs = append(errs, fmt.Errorf("%s.name: required (names the extension in logs, metrics and conditions)", w))
	}
	switch {
	case r.Address == "" && r.Service == "":
		errs = append(errs, fmt.Errorf("%s.address: required (host:port of the extension's gRPC server), or extensionService (namespace/name of an ExtensionService)", w))
	case r.Address != "" && r.Service != "":
		errs = append(errs, fmt.Errorf("%s: address and extensionService are exclusive: give one", w))
	case r.Service != "" && !namespacedName(r.Service):
		errs = append(errs, fmt.Errorf("%s.extensionService: must be namespace/name, got %q", w, r.Service))
	}
	return append(errs, r.TLS.validate(w)...)
}

// namespacedName reports whether ref is "namespace/name".
func namespacedName(ref string) bool {
	ns, name, ok := strings.Cut(ref, "/")
	return ok && ns != "" && name != "" && !strings.Contains(name, "/")
}

// validate checks the TLS settings; nil is plaintext.
func (t *TLS) validate(w string) []error {
	if t == nil {
		return nil
	}
	var errs []error
	if (t.CertFile == "") != (t.KeyFile == "") {
		errs = append(errs, fmt.Errorf("%s.tls: certFile and keyFile go together (the client certificate and its key)", w))
	}
	if t.CASecret != "" && t.CAFile != "" {
		errs = append(errs, fmt.Errorf("%s.tls: caFile and caSecret are exclusive: give one", w))
	}
	if t.ClientSecret != "" && t.CertFile != "" {
		errs = append(errs, fmt.Errorf("%s.tls: certFile and clientCertificateSecret are exclusive: give one", w))
	}
	for _, f := range []struct{ field, ref string }{{"caSecret", t.CASecret}, {"clientCertificateSecret", t.ClientSecret}} {
		if f.ref != "" && !namespacedName(f.ref) {
			errs = append(errs, fmt.Errorf("%s.tls.%s: must be namespace/name, got %q", w, f.field, f.ref))
		}
	}
	return errs
}

// validateHooks checks that the hooks are known, listed once, and at
// least one.
func (r *Registration) validateHooks(w string) []error {
	var errs []error
	if len(r.Hooks) == 0 {
		errs = append(errs, fmt.Errorf("%s.hooks: subscribe to at least one of %v", w, Hooks))
	}
	seen := map[Hook]bool{}
	for _, h := range r.Hooks {
		switch {
		case !slices.Contains(Hooks, h):
			errs = append(errs, fmt.Errorf("%s.hooks: unknown hook %q (one of %v)", w, h, Hooks))
		case seen[h]:
			errs = append(errs, fmt.Errorf("%s.hooks: %s listed twice", w, h))
		}
		seen[h] = true
	}
	return errs
}

// validateDialect checks the dialect and the hooks and settings it has.
func (r *Registration) validateDialect(w string) []error {
	switch r.Dialect {
	case "", DialectPortcullis:
		if r.Translation != nil {
			return []error{fmt.Errorf("%s.translation: only for dialect %s (a %s extension's PostTranslateModify receives every resource type)", w, DialectEnvoyGateway, DialectPortcullis)}
		}
	case DialectEnvoyGateway:
		if r.Subscribed(HookPostTranslateInsert) {
			return []error{fmt.Errorf("%s.hooks: %s is not a hook of dialect %s (add clusters with PostTranslateModify)", w, HookPostTranslateInsert, DialectEnvoyGateway)}
		}
	default:
		return []error{fmt.Errorf("%s.dialect: %q is neither %s nor %s", w, r.Dialect, DialectPortcullis, DialectEnvoyGateway)}
	}
	return nil
}

// validateLimits checks the failure policy, the timeout, the budget and
// the bounds.
func (r *Registration) validateLimits(w string) []error {
	var errs []error
	if r.Timeout < 0 {
		errs = append(errs, fmt.Errorf("%s.timeout: %v is negative", w, r.Timeout))
	}
	switch r.FailurePolicy {
	case "", FailClosed, FailOpen:
	default:
		errs = append(errs, fmt.Errorf("%s.failurePolicy: %q is neither Closed nor Open", w, r.FailurePolicy))
	}
	if r.MaxMessageSize < 0 {
		errs = append(errs, fmt.Errorf("%s.maxMessageSize: %d is negative", w, r.MaxMessageSize))
	}
	if r.MaxConcurrency < 0 {
		errs = append(errs, fmt.Errorf("%s.maxConcurrency: %d is negative", w, r.MaxConcurrency))
	}
	if r.PhaseBudget < 0 {
		errs = append(errs, fmt.Errorf("%s.phaseBudget: %v is negative", w, r.PhaseBudget))
	} else if d := r.withDefaults(); r.Timeout >= 0 && d.PhaseBudget < d.Timeout {
		errs = append(errs, fmt.Errorf("%s.phaseBudget: %v is shorter than the timeout of one call (%v)", w, d.PhaseBudget, d.Timeout))
	}
	return errs
}

// validateKinds checks the kinds, and that each kind reaches a hook the
// extension answers and each kind-driven hook has kinds: a registration
// whose hook is never called is a mistake to report, not to run silently.
func (r *Registration) validateKinds(w string) []error {
	var errs []error
	seen := map[schema.GroupKind]bool{}
	for _, l := range []struct {
		field string
		kinds []schema.GroupVersionKind
	}{{"resources", r.Resources}, {"backendResources", r.BackendResources}, {"policyResources", r.PolicyResources}} {
		for i, k := range l.kinds {
			if err := kindProblem(fmt.Sprintf("%s.%s[%d]", w, l.field, i), k, seen); err != nil {
				errs = append(errs, err)
			}
			seen[k.GroupKind()] = true
		}
	}
	return append(errs, r.validateKindHooks(w)...)
}

// kindProblem is what is wrong with kind k (at names it), given the kinds
// seen before it; nil when nothing.
func kindProblem(at string, k schema.GroupVersionKind, seen map[schema.GroupKind]bool) error {
	switch {
	case k.Kind == "" || k.Version == "":
		return fmt.Errorf("%s: group, version and kind are required, got %q", at, k.String())
	case slices.Contains(ourGroups, k.Group):
		return fmt.Errorf("%s: %s: the group %q is one Portcullis reads itself; an extension registers kinds of its own group", at, k.Kind, k.Group)
	case slices.Contains(ourKinds, k.Kind):
		return fmt.Errorf("%s: %s: a kind named as one of Portcullis's own (statuses and conditions name objects by kind): rename it", at, k.Kind)
	case seen[k.GroupKind()]:
		return fmt.Errorf("%s: %s listed twice", at, k.GroupKind())
	}
	return nil
}

// validateKindHooks checks that the kinds and the hooks they drive come
// together.
func (r *Registration) validateKindHooks(w string) []error {
	var errs []error
	routeKinds := len(r.Resources)+len(r.PolicyResources) > 0
	backends := len(r.BackendResources) > 0
	switch {
	case routeKinds && !r.Subscribed(HookPostRouteModify):
		errs = append(errs, fmt.Errorf("%s.hooks: resources and policyResources are sent only to PostRouteModify: subscribe to it", w))
	case !routeKinds && !backends && r.Subscribed(HookPostRouteModify):
		errs = append(errs, fmt.Errorf("%s.resources: PostRouteModify is called only for routes that reference (or are targeted by, or send to) a kind of the extension: register one in resources, policyResources or backendResources", w))
	}
	switch {
	case backends && !r.Subscribed(HookPostClusterModify) && !r.Subscribed(HookPostRouteModify):
		errs = append(errs, fmt.Errorf("%s.hooks: backendResources are sent only to PostClusterModify and PostRouteModify: subscribe to one", w))
	case !backends && r.Subscribed(HookPostClusterModify):
		errs = append(errs, fmt.Errorf("%s.backendResources: PostClusterModify is called only for clusters of backends of a kind of the extension: register one", w))
	}
	return errs
}

// ValidateAll checks registrations meant to run together: each, and that
// names and kinds are not shared (one kind, one owner).
func ValidateAll(regs []Registration) error {
	var errs []error
	names := map[string]string{}
	owners := map[schema.GroupKind]string{}
	for i := range regs {
		r := &regs[i]
		if err := r.Validate(); err != nil {
			errs = append(errs, err)
		}
		w := r.Where
		if w == "" {
			w = fmt.Sprintf("extensions[%d]", i)
		}
		if prev, ok := names[r.Name]; ok && r.Name != "" {
			errs = append(errs, fmt.Errorf("%s.name: %q is also the name of %s", w, r.Name, prev))
		}
		names[r.Name] = w
		for _, k := range r.Kinds() {
			if prev, ok := owners[k.GroupKind()]; ok && prev != w {
				errs = append(errs, fmt.Errorf("%s: %s is already registered by %s: a kind has one owner", w, k.GroupKind(), prev))
				continue
			}
			owners[k.GroupKind()] = w
		}
	}
	return errors.Join(errs...)
}

func (r *Registration) where() string {
	if r.Where == "" {
		return "extension"
	}
	return r.Where
}

// withDefaults returns r with its unset fields at their defaults.
func (r Registration) withDefaults() Registration {
	if r.Timeout == 0 {
		r.Timeout = DefaultTimeout
	}
	if r.FailurePolicy == "" {
		r.FailurePolicy = FailClosed
	}
	if r.MaxMessageSize == 0 {
		r.MaxMessageSize = DefaultMaxMessageSize
	}
	if r.PhaseBudget == 0 {
		r.PhaseBudget = DefaultPhaseBudget
	}
	if r.MaxConcurrency == 0 {
		r.MaxConcurrency = DefaultMaxConcurrency
	}
	if r.Dialect == "" {
		r.Dialect = DialectPortcullis
	}
	if r.Dialect == DialectEnvoyGateway && r.Translation == nil {
		t := DefaultTranslation
		r.Translation = &t
	}
	if r.Dialect == DialectEnvoyGateway && r.Retry == nil {
		rt := DefaultRetry
		r.Retry = &rt
	}
	return r
}

// reconnectBackoff is how a connection to an extension that went away
// retries: soon, and never more than 5 s apart.
var reconnectBackoff = backoff.Config{BaseDelay: 200 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 5 * time.Second}

// Dial returns a connection to the registration's extension, with its TLS
// settings and message size; opts come after those. The connection is
// lazy (grpc.NewClient): an extension that is down fails the calls, not
// Dial. Dial validates the registration first.
func Dial(reg Registration, opts ...grpc.DialOption) (*grpc.ClientConn, error) {
	conn, _, err := dial(reg, opts...)
	return conn, err
}

// dial is Dial, with the Secret-backed TLS material of the connection
// (nil without): whoever runs its calls feeds it (Runner.SetSecrets).
func dial(reg Registration, opts ...grpc.DialOption) (*grpc.ClientConn, *secretTLS, error) {
	if err := reg.Validate(); err != nil {
		return nil, nil, err
	}
	reg = reg.withDefaults()
	creds := insecure.NewCredentials()
	secrets := newSecretTLS(reg.TLS, reg.where())
	if reg.TLS != nil {
		c, err := reg.TLS.config(reg.where())
		if err != nil {
			return nil, nil, err
		}
		if secrets != nil {
			secrets.apply(c)
		}
		creds = credentials.NewTLS(c)
	}
	base := []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		// gRPC's default reconnect backoff grows to 120 s: a recovered
		// extension would wait that long for the next rebuild's retry.
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: reconnectBackoff, MinConnectTimeout: 5 * time.Second}),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(reg.MaxMessageSize), grpc.MaxCallSendMsgSize(reg.MaxMessageSize)),
	}
	if reg.Retry != nil {
		base = append(base, grpc.WithDefaultServiceConfig(reg.Retry.serviceConfig()))
	}
	conn, err := grpc.NewClient(reg.Address, append(base, opts...)...)
	if err != nil {
		return nil, nil, fmt.Errorf("%s.address %q: %w", reg.where(), reg.Address, err)
	}
	return conn, secrets, nil
}

// dialService is Dial for a registration reached through an
// ExtensionService: a connection whose addresses the returned resolver
// sets. Until it does, calls wait for them (within their deadline).
func dialService(reg Registration, opts ...grpc.DialOption) (*grpc.ClientConn, *manual.Resolver, *secretTLS, error) {
	r := manual.NewBuilderWithScheme("portcullis-extension")
	// The address is only a name: the resolver gives the endpoints.
	reg.Address = r.Scheme() + ":///" + reg.Service
	svc := reg.Service
	reg.Service = ""
	conn, secrets, err := dial(reg, append([]grpc.DialOption{grpc.WithResolvers(r)}, opts...)...)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s.extensionService %q: %w", reg.where(), svc, err)
	}
	return conn, r, secrets, nil
}

// config reads the TLS files.
func (t *TLS) config(w string) (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("%s.tls.caFile: %w", w, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s.tls.caFile %s: no PEM certificate in it", w, t.CAFile)
		}
		c.RootCAs = pool
	}
	if t.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("%s.tls.certFile/keyFile: %w", w, err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}
