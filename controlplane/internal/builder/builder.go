// Package builder validates a snapshot of input objects, resolves their
// references and computes the routing model (internal/ir) and the findings
// for each object's status. Its result is a pure function of its input (a
// Memo only saves work): no clients, no clocks, no goroutines.
//
// An invalid object never affects the others: a root HTTPProxy with an
// error is not served at all (never served half-configured, never without
// its authorization), a child with an error contributes no routes, and
// everything else is built as usual.
package builder

import (
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/config"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// Options are the control plane's settings that shape the build.
type Options struct {
	// RootNamespaces, when not empty, are the only namespaces where root
	// HTTPProxies (with a virtualhost) may live.
	RootNamespaces []string
	// IngressClassName selects the HTTPProxies this control plane serves:
	// those with this class, and those with none.
	IngressClassName string
	// FallbackCertificate is the Secret ("namespace/name") served to
	// clients without SNI by virtual hosts that enable it.
	FallbackCertificate string
	// ExternalNameServices lets routes and ExternalName Services send
	// traffic to the Service's DNS name. Off by default: a tenant could
	// otherwise point Envoy anywhere its network reaches.
	ExternalNameServices bool
	// LoopbackExternalNames also allows ExternalName Services that name this
	// host (localhost, 127.0.0.0/8, ::1), which can reach Envoy's own admin
	// interface. Only for tests and local development.
	LoopbackExternalNames bool
	// GlobalExtAuth and GlobalExtProc come from the configuration file
	// (internal/config), already checked there.
	GlobalExtAuth *config.GlobalExtAuth
	GlobalExtProc *contourv1.ExternalProcessor
	// Limits bound each root's include expansion (zeros: the defaults).
	Limits config.Limits
}

// Result is the output of one build.
type Result struct {
	Model *ir.Model
	// Status holds the findings for every HTTPProxy, ExtensionService and
	// TLSCertificateDelegation this control plane owns, sorted.
	Status []*status.Object
	// Sources says which objects each virtual host, cluster and secret of
	// the model came from.
	Sources *Sources
	// Unavailable lists the problems of the global authorization and
	// processing (configuration file) whose ExtensionService is missing or
	// invalid: they fail closed and need an operator.
	Unavailable []status.Problem
}

// Kinds, as they appear in status references.
const (
	KindHTTPProxy                = objects.KindHTTPProxy
	KindExtensionService         = objects.KindExtensionService
	KindTLSCertificateDelegation = objects.KindTLSCertificateDelegation
)

type builder struct {
	opts Options
	in   *objects.Set

	secrets     map[types.NamespacedName]*corev1.Secret
	services    map[types.NamespacedName]*corev1.Service
	slices      map[types.NamespacedName][]*discoveryv1.EndpointSlice
	extensions  map[types.NamespacedName]*extension
	proxies     map[types.NamespacedName]*contourv1.HTTPProxy
	delegations []*contourv1.TLSCertificateDelegation

	status   map[objects.Ref]*status.Object
	clusters map[string]*ir.Cluster
	secretsO map[string]*ir.Secret
	// visited holds the HTTPProxies reached from a root.
	visited map[types.NamespacedName]bool
	// global is the resolved global authorization and processing.
	global  globals
	sources *sourceTracker
	// parsedTLS caches tlsSecret's checks by Secret.
	parsedTLS map[types.NamespacedName]parsedSecret
	// memo holds the roots of the previous build (nil: none); cur is the
	// output of the root being built (nil outside roots).
	memo *Memo
	cur  *rootOut
	// rootSources are the sources of each root (b.sources holds the rest).
	rootSources []*sourceTracker
	// exp is the include expansion of the root being built (expand.go).
	exp *expansion
}

// Build computes the model and the status findings for one snapshot.
func Build(in *objects.Set, opts Options) *Result { return BuildCached(in, opts, nil) }

// BuildCached is Build reusing the output of roots whose inputs are
// unchanged since the previous build with memo (see Memo; nil for none).
// `portcullis serve` keeps one across rebuilds; the result is Build's.
func BuildCached(in *objects.Set, opts Options, memo *Memo) *Result {
	b := &builder{
		memo:       memo,
		opts:       opts,
		in:         in,
		secrets:    map[types.NamespacedName]*corev1.Secret{},
		services:   map[types.NamespacedName]*corev1.Service{},
		slices:     map[types.NamespacedName][]*discoveryv1.EndpointSlice{},
		extensions: map[types.NamespacedName]*extension{},
		proxies:    map[types.NamespacedName]*contourv1.HTTPProxy{},
		status:     map[objects.Ref]*status.Object{},
		clusters:   map[string]*ir.Cluster{},
		secretsO:   map[string]*ir.Secret{},
		visited:    map[types.NamespacedName]bool{},
		sources:    newSourceTracker(),
	}
	b.index()
	model := &ir.Model{}
	b.buildExtensions()
	b.buildDelegations()
	b.buildGlobals(model)
	b.startMemo()
	b.buildProxies(model)
	b.finish(model)

	res := &Result{Model: model, Sources: &Sources{parts: append([]*sourceTracker{b.sources}, b.rootSources...)}}
	for _, p := range []*status.Problem{b.global.authProblem, b.global.procProblem} {
		if p != nil {
			res.Unavailable = append(res.Unavailable, *p)
		}
	}
	for _, o := range b.status {
		res.Status = append(res.Status, o)
	}
	status.SortObjects(res.Status)
	return res
}

func nn(namespace, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: namespace, Name: name}
}

func (b *builder) index() {
	for _, s := range b.in.Secrets {
		b.secrets[nn(s.Namespace, s.Name)] = s
	}
	for _, s := range b.in.Services {
		b.services[nn(s.Namespace, s.Name)] = s
	}
	for _, s := range b.in.EndpointSlices {
		svc := s.Labels[discoveryv1.LabelServiceName]
		if svc == "" {
			continue
		}
		k := nn(s.Namespace, svc)
		b.slices[k] = append(b.slices[k], s)
	}
	for _, p := range b.in.HTTPProxies {
		if !b.ownsClass(p.Spec.IngressClassName) {
			continue
		}
		b.proxies[nn(p.Namespace, p.Name)] = p
	}
	b.delegations = b.in.Delegations
}

func (b *builder) ownsClass(class string) bool {
	return class == "" || class == b.opts.IngressClassName
}

// statusOf returns (creating) the findings of an object.
func (b *builder) statusOf(kind, namespace, name string, generation int64) *status.Object {
	ref := objects.Ref{Kind: kind, Namespace: namespace, Name: name}
	o, ok := b.status[ref]
	if !ok {
		o = &status.Object{Ref: ref, Generation: generation}
		ws := b.in.Warnings[ref]
		for _, w := range ws {
			o.AddError(contourv1.ConditionTypeSpecError, decodeComplaintReason(w), decodeComplaintMessage(w))
		}
		if b.cur != nil {
			b.cur.warnings = append(b.cur.warnings, warningDep{ref, ws})
		}
		b.status[ref] = o
	}
	return o
}

func (b *builder) proxyStatus(p *contourv1.HTTPProxy) *status.Object {
	return b.specStatus(KindHTTPProxy, p, p.Spec)
}

// finish sorts the model's lists so that the translator's input is
// deterministic.
func (b *builder) finish(m *ir.Model) {
	for _, c := range b.clusters {
		m.Clusters = append(m.Clusters, c)
	}
	sort.Slice(m.Clusters, func(i, j int) bool { return m.Clusters[i].Name < m.Clusters[j].Name })
	for _, s := range b.secretsO {
		m.Secrets = append(m.Secrets, s)
	}
	sort.Slice(m.Secrets, func(i, j int) bool { return m.Secrets[i].Name < m.Secrets[j].Name })
	sort.Slice(m.Insecure, func(i, j int) bool { return m.Insecure[i].FQDN < m.Insecure[j].FQDN })
	sort.Slice(m.Secure, func(i, j int) bool { return m.Secure[i].FQDN < m.Secure[j].FQDN })
}

// splitRef parses "name" or "namespace/name", defaulting the namespace.
func splitRef(ref, defaultNamespace string) types.NamespacedName {
	if ns, name, ok := strings.Cut(ref, "/"); ok {
		return nn(ns, name)
	}
	return nn(defaultNamespace, ref)
}
