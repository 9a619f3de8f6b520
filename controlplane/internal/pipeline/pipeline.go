// Package pipeline runs the control plane's pure stages in order (builder,
// then translator) and renders their result. `portcullis translate` and
// `portcullis serve` both call Run, then, with extensions registered, the
// same extension hook stage (internal/extstage), so what the CLI prints
// is what Envoy gets.
package pipeline

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	gatewayv1alpha1 "github.com/portcullis/portcullis/apis/gateway/v1alpha1"
	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/apis/projectcontour/v1alpha1"
	"github.com/portcullis/portcullis/controlplane/internal/builder"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/parallel"
	"github.com/portcullis/portcullis/controlplane/internal/status"
	"github.com/portcullis/portcullis/controlplane/internal/statuswriter"
	"github.com/portcullis/portcullis/controlplane/internal/translator"
)

// Options configure every stage.
type Options struct {
	Builder    builder.Options
	Translator translator.Options
}

// DefaultOptions are the options without flags or a configuration file:
// the shared listeners bind all addresses, ports 8080 and 8443.
func DefaultOptions() Options {
	var o Options
	o.Builder.HTTP, o.Builder.HTTPS = builder.DefaultListeners()
	return o
}

// Result is the output of one run.
type Result struct {
	Build     *builder.Result
	Resources *translator.Resources
}

// Index maps every resource of a result to the objects it came from
// (Result.Resources.Index): serve attributes Envoy's rejections with it.
type Index = translator.Index

// ExtensionServiceEndpoints are the addresses (host:port) of the ready
// endpoints of the ExtensionService namespace/name in r's model (every
// valid ExtensionService has a cluster there); none when it is missing,
// invalid or has none ready.
func ExtensionServiceEndpoints(r *Result, namespace, name string) []string {
	cs := r.Build.Model.Clusters
	cname := builder.ExtensionClusterName(namespace, name)
	i, found := slices.BinarySearchFunc(cs, cname, func(c *ir.Cluster, n string) int { return strings.Compare(c.Name, n) })
	if !found {
		return nil
	}
	var out []string
	for _, e := range cs[i].Endpoints {
		out = append(out, net.JoinHostPort(e.Address, strconv.Itoa(int(e.Port))))
	}
	return out
}

// Run builds and translates one snapshot.
func Run(in *objects.Set, opts Options) *Result { return RunCached(in, opts, nil) }

// Cache is what a rebuild reuses from the previous one: the output of
// unchanged roots (builder.Memo) and the translation of unchanged virtual
// hosts (translator.Cache). For one goroutine at a time.
type Cache struct {
	Build     *builder.Memo
	Translate *translator.Cache
}

// NewCache returns an empty cache.
func NewCache() *Cache { return &Cache{Build: builder.NewMemo(), Translate: translator.NewCache()} }

// RunCached is Run reusing what it can from the previous run with c (nil
// for none). `portcullis serve` keeps one across rebuilds; the result is
// Run's.
func RunCached(in *objects.Set, opts Options, c *Cache) *Result {
	if c == nil {
		c = &Cache{}
	}
	b := builder.BuildCached(in, opts.Builder, c.Build)
	return &Result{Build: b, Resources: translator.TranslateCached(b.Model, opts.Translator, c.Translate)}
}

// Statuses renders the Kubernetes status of every object of objs (a
// build's findings, sorted), given the objects' current statuses in `in`
// and the time to use for transitions.
func Statuses(in *objects.Set, objs []*status.Object, now metav1.Time) []statuswriter.Update {
	// The current status of each object, so transitions keep their times.
	proxies := currentStatus(objects.KindHTTPProxy, in.HTTPProxies, func(p *contourv1.HTTPProxy) contourv1.HTTPProxyStatus { return p.Status })
	extensions := currentStatus(objects.KindExtensionService, in.ExtensionServices,
		func(e *v1alpha1.ExtensionService) v1alpha1.ExtensionServiceStatus { return e.Status })
	delegations := currentStatus(objects.KindTLSCertificateDelegation, in.Delegations,
		func(d *contourv1.TLSCertificateDelegation) contourv1.TLSCertificateDelegationStatus { return d.Status })
	classes := currentStatus(objects.KindGatewayClass, in.GatewayClasses, func(c *gwapiv1.GatewayClass) gwapiv1.GatewayClassStatus { return c.Status })
	gateways := currentStatus(objects.KindGateway, in.Gateways, func(g *gwapiv1.Gateway) gwapiv1.GatewayStatus { return g.Status })
	listenerSets := currentStatus(objects.KindListenerSet, in.ListenerSets, func(l *gwapiv1.ListenerSet) gwapiv1.ListenerSetStatus { return l.Status })
	routes := currentRouteStatuses(in)
	policies := currentStatus(objects.KindExtAuthPolicy, in.ExtAuthPolicies, func(p *gatewayv1alpha1.ExtAuthPolicy) gwapiv1.PolicyStatus { return p.Status })
	maps.Copy(policies, currentStatus(objects.KindExtProcPolicy, in.ExtProcPolicies, func(p *gatewayv1alpha1.ExtProcPolicy) gwapiv1.PolicyStatus { return p.Status }))
	maps.Copy(policies, currentStatus(objects.KindBackendTLSPolicy, in.BackendTLSPolicies, func(p *gwapiv1.BackendTLSPolicy) gwapiv1.PolicyStatus { return p.Status }))
	// The extensions' objects: only their policies get a status (the
	// builder reports on nothing else of theirs).
	extObjects := make(map[objects.Ref]*unstructured.Unstructured, len(in.Extensions))
	for _, u := range in.Extensions {
		extObjects[objects.Ref{Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName()}] = u
	}

	out := make([]statuswriter.Update, 0, len(objs))
	for _, o := range objs {
		u := statuswriter.Update{Ref: o.Ref}
		// A missing entry is the zero status: the object has none yet.
		switch o.Ref.Kind {
		case objects.KindHTTPProxy:
			st := status.HTTPProxy(o, proxies[o.Ref], now)
			u.HTTPProxy = &st
		case objects.KindExtensionService:
			st := status.ExtensionService(o, extensions[o.Ref], now)
			u.ExtensionService = &st
		case objects.KindTLSCertificateDelegation:
			st := status.TLSCertificateDelegation(o, delegations[o.Ref], now)
			u.Delegation = &st
		case objects.KindGatewayClass:
			st := status.GatewayClass(o, classes[o.Ref], now)
			u.GatewayClass = &st
		case objects.KindGateway:
			st := status.Gateway(o, gateways[o.Ref], now)
			u.Gateway = &st
		case objects.KindListenerSet:
			st := status.ListenerSet(o, listenerSets[o.Ref], now)
			u.ListenerSet = &st
		case objects.KindHTTPRoute, objects.KindGRPCRoute, objects.KindTLSRoute, objects.KindTCPRoute, objects.KindUDPRoute:
			u.SetRoute(status.Route(o, routes[o.Ref], now))
		case objects.KindExtAuthPolicy:
			st := status.Policy(o, policies[o.Ref], now)
			u.ExtAuthPolicy = &st
		case objects.KindExtProcPolicy:
			st := status.Policy(o, policies[o.Ref], now)
			u.ExtProcPolicy = &st
		case objects.KindBackendTLSPolicy:
			st := status.Policy(o, policies[o.Ref], now)
			u.BackendTLSPolicy = &st
		default:
			if x := extObjects[o.Ref]; x != nil {
				st := status.Policy(o, statuswriter.ExtensionPolicyStatus(x), now)
				u.ExtensionPolicy, u.ExtensionGVK = &st, x.GroupVersionKind()
			}
		}
		out = append(out, u)
	}
	return out
}

// currentRouteStatuses are the current statuses of the routes of every
// kind, by reference.
func currentRouteStatuses(in *objects.Set) map[objects.Ref]gwapiv1.RouteStatus {
	routes := currentStatus(objects.KindHTTPRoute, in.HTTPRoutes, func(r *gwapiv1.HTTPRoute) gwapiv1.RouteStatus { return r.Status.RouteStatus })
	maps.Copy(routes, currentStatus(objects.KindGRPCRoute, in.GRPCRoutes, func(r *gwapiv1.GRPCRoute) gwapiv1.RouteStatus { return r.Status.RouteStatus }))
	maps.Copy(routes, currentStatus(objects.KindTLSRoute, in.TLSRoutes, func(r *gwapiv1.TLSRoute) gwapiv1.RouteStatus { return r.Status.RouteStatus }))
	maps.Copy(routes, currentStatus(objects.KindTCPRoute, in.TCPRoutes, func(r *gwapiv1.TCPRoute) gwapiv1.RouteStatus { return r.Status.RouteStatus }))
	maps.Copy(routes, currentStatus(objects.KindUDPRoute, in.UDPRoutes, func(r *gwapiv1.UDPRoute) gwapiv1.RouteStatus { return r.Status.RouteStatus }))
	return routes
}

// Document is what `portcullis translate` prints.
type Document struct {
	Status []statuswriter.Update `json:"status"`
	XDS    XDS                   `json:"xds"`
}

// XDS holds the Envoy resources as protojson objects (with "@type").
type XDS struct {
	Listeners []json.RawMessage `json:"listeners"`
	Routes    []json.RawMessage `json:"routes"`
	Clusters  []json.RawMessage `json:"clusters"`
	Endpoints []json.RawMessage `json:"endpoints"`
	Secrets   []json.RawMessage `json:"secrets"`
}

// NewDocument renders a result. Private keys are redacted: the document is
// for people and logs.
func NewDocument(in *objects.Set, r *Result, now metav1.Time) (*Document, error) {
	d := &Document{Status: Statuses(in, r.Build.Status, now)}
	var err error
	conv := func(ms []proto.Message) []json.RawMessage {
		out := make([]json.RawMessage, len(ms))
		errs := make([]error, len(ms))
		parallel.For(len(ms), func(i int) { out[i], errs[i] = MarshalResource(ms[i]) })
		if e := errors.Join(errs...); e != nil && err == nil {
			err = e
		}
		return out
	}
	d.XDS = XDS{
		Listeners: conv(r.Resources.Listeners),
		Routes:    conv(r.Resources.Routes),
		Clusters:  conv(r.Resources.Clusters),
		Endpoints: conv(r.Resources.Endpoints),
		Secrets:   conv(translator.Redacted(r.Resources.Secrets)),
	}
	return d, err
}

// MarshalResource renders one Envoy resource as compact protojson with its
// "@type" first, as protojson renders it inside an Any (written here
// without the Any: packing would marshal the resource twice). An Any of a
// type this binary does not link renders as its type URL and bytes
// (renderOptions) instead of failing. Every rendering of Envoy resources
// for people goes through it.
func MarshalResource(m proto.Message) ([]byte, error) {
	b, err := renderOptions.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("marshal %s: %w", translator.ResourceName(m), err)
	}
	// protojson's whitespace is deliberately unstable; compact it.
	var body bytes.Buffer
	if err := json.Compact(&body, b); err != nil {
		return nil, err
	}
	fields := body.Bytes()[1:] // after the '{'
	out := make([]byte, 0, len(fields)+100)
	out = append(out, `{"@type":"type.googleapis.com/`...)
	out = append(out, m.ProtoReflect().Descriptor().FullName()...)
	out = append(out, '"')
	if len(fields) > 1 { // not just "}"
		out = append(out, ',')
	}
	return append(out, fields...), nil
}

// Encode renders a document as indented JSON ("json") or YAML ("yaml"),
// as WriteTo writes it.
func (d *Document) Encode(format string) ([]byte, error) {
	var b bytes.Buffer
	if err := d.WriteTo(&b, format); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// currentStatus maps each object of one kind to its current status.
func currentStatus[T interface {
	GetNamespace() string
	GetName() string
}, S any](kind string, objs []T, status func(T) S) map[objects.Ref]S {
	m := make(map[objects.Ref]S, len(objs))
	for _, o := range objs {
		m[objects.Ref{Kind: kind, Namespace: o.GetNamespace(), Name: o.GetName()}] = status(o)
	}
	return m
}

// UIDs are the UIDs of the objects that get a status, by reference: an
// object deleted and created again under its name between two builds is
// another object, whose status must be written even when its findings
// are the same (serve's changed-statuses check).
func UIDs(in *objects.Set) map[objects.Ref]types.UID {
	out := map[objects.Ref]types.UID{}
	addUIDs(out, objects.KindHTTPProxy, in.HTTPProxies)
	addUIDs(out, objects.KindExtensionService, in.ExtensionServices)
	addUIDs(out, objects.KindTLSCertificateDelegation, in.Delegations)
	addUIDs(out, objects.KindGatewayClass, in.GatewayClasses)
	addUIDs(out, objects.KindGateway, in.Gateways)
	addUIDs(out, objects.KindHTTPRoute, in.HTTPRoutes)
	addUIDs(out, objects.KindGRPCRoute, in.GRPCRoutes)
	addUIDs(out, objects.KindTLSRoute, in.TLSRoutes)
	addUIDs(out, objects.KindTCPRoute, in.TCPRoutes)
	addUIDs(out, objects.KindUDPRoute, in.UDPRoutes)
	addUIDs(out, objects.KindListenerSet, in.ListenerSets)
	addUIDs(out, objects.KindExtAuthPolicy, in.ExtAuthPolicies)
	addUIDs(out, objects.KindExtProcPolicy, in.ExtProcPolicies)
	addUIDs(out, objects.KindBackendTLSPolicy, in.BackendTLSPolicies)
	for _, o := range in.Extensions {
		out[objects.Ref{Kind: o.GetKind(), Namespace: o.GetNamespace(), Name: o.GetName()}] = o.GetUID()
	}
	return out
}

// addUIDs adds the UIDs of objs, of kind, to out.
func addUIDs[T metav1.Object](out map[objects.Ref]types.UID, kind string, objs []T) {
	for _, o := range objs {
		out[objects.Ref{Kind: kind, Namespace: o.GetNamespace(), Name: o.GetName()}] = o.GetUID()
	}
}
