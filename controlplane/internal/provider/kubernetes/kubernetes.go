// Package kubernetes reads the control plane's input objects from a
// Kubernetes API server (informers through controller-runtime's cache).
// Their status goes back through internal/statuswriter, with this
// provider's cache and client. The Gateway API kinds and our policies are
// optional: they are watched once the API server serves them
// (gatewayapi.go). So are the kinds the extension servers registered, read
// as unstructured objects through dynamic informers (extensions.go).
package kubernetes

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwapiv1alpha3 "sigs.k8s.io/gateway-api/apis/v1alpha3"

	gatewayv1alpha1 "github.com/portcullis/portcullis/apis/gateway/v1alpha1"
	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/apis/projectcontour/v1alpha1"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// Provider watches the API server.
type Provider struct {
	log    *slog.Logger
	config *rest.Config
	cache  cache.Cache
	client client.Client
	// stores are the informers' stores, by kind (see watched and
	// gatewayKinds). Only Run's goroutine uses them.
	stores map[reflect.Type]toolscache.Store
	// handler is the event handler of every informer.
	handler toolscache.ResourceEventHandler

	discovery discovery.DiscoveryInterface
	access    authorizationv1client.SelfSubjectAccessReviewsGetter
	// gateway is what the provider knows of the Gateway API's kinds.
	gateway gatewayState

	// dynamic reads the kinds the extension servers registered, whose
	// Go types we do not have (extensions.go).
	dynamic dynamic.Interface
	ext     extensionState
}

// Cache is the informers' cache, for reads that must not go to the API
// server (the status writer's).
func (p *Provider) Cache() client.Reader { return p.cache }

// Client talks to the API server.
func (p *Provider) Client() client.Client { return p.client }

// RestConfig is the API server's configuration, for the other clients of
// the process (leader election's).
func (p *Provider) RestConfig() *rest.Config { return p.config }

// New connects to the cluster of kubeconfig (empty: $KUBECONFIG, then the
// in-cluster configuration). extensionKinds are the kinds the extension
// servers registered: their objects go to Set.Extensions.
func New(kubeconfig string, log *slog.Logger, extensionKinds ...schema.GroupVersionKind) (*Provider, error) {
	cfg, err := restConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	return newProvider(cfg, log, extensionKinds...)
}

func newProvider(cfg *rest.Config, log *slog.Logger, extensionKinds ...schema.GroupVersionKind) (*Provider, error) {
	c, err := cache.New(cfg, cache.Options{Scheme: objects.Scheme})
	if err != nil {
		return nil, err
	}
	cl, err := client.New(cfg, client.Options{Scheme: objects.Scheme})
	if err != nil {
		return nil, err
	}
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	access, err := authorizationv1client.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Provider{log: log, config: cfg, cache: c, client: cl, discovery: disco, access: access, gateway: gatewayState{interval: gatewayPollInterval},
		dynamic: dyn, ext: newExtensionState(extensionKinds)}, nil
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		rules.ExplicitPath = kubeconfig
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubernetes configuration: %w", err)
	}
	cfg.UserAgent = "portcullis"
	// client-go's default (5 requests/s) would take minutes to write the
	// statuses of thousands of objects on a first sync.
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = 200, 400
	}
	return cfg, nil
}

// watched are the kinds the control plane reads.
func watched() []client.Object {
	return []client.Object{
		&contourv1.HTTPProxy{}, &v1alpha1.ExtensionService{}, &contourv1.TLSCertificateDelegation{},
		&corev1.Secret{}, &corev1.Service{}, &discoveryv1.EndpointSlice{},
		// BackendTLSPolicies' CA certificates.
		&corev1.ConfigMap{},
	}
}

// Run starts the informers and calls update with a full snapshot after the
// initial sync and after every change.
func (p *Provider) Run(ctx context.Context, update func(*objects.Set)) error {
	changed := make(chan struct{}, 1)
	signal := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	p.handler = toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { signal() },
		UpdateFunc: func(old, cur any) {
			if !ignoredUpdate(old, cur) {
				signal()
			}
		},
		DeleteFunc: func(any) { signal() },
	}
	p.stores = map[reflect.Type]toolscache.Store{}
	for _, obj := range watched() {
		if err := p.watch(ctx, obj); err != nil {
			return fmt.Errorf("watching %T (are the CRDs installed? kubectl apply -f apis/crds/): %w", obj, err)
		}
	}
	// Before the cache starts, so that the first snapshot has them.
	p.watchGatewayAPI(ctx)
	errc := make(chan error, 1)
	go func() { errc <- p.cache.Start(ctx) }()
	syncCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if !p.cache.WaitForCacheSync(syncCtx) {
		return fmt.Errorf("the informers did not sync: check access to the API server and the RBAC of portcullis")
	}
	p.log.Info("kubernetes informers synced")
	// Synced before the first snapshot, which has their objects.
	p.watchExtensions(ctx)
	signal()
	poll := time.NewTicker(p.gateway.interval)
	defer poll.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-errc:
			return err
		case <-changed:
			update(p.snapshot())
		case <-poll.C:
			// CRDs installed (or RBAC granted) after the start: their
			// informers start now, and their first objects signal a
			// rebuild.
			if p.gateway.complete() && p.ext.complete() {
				poll.Stop()
				continue
			}
			if !p.gateway.complete() {
				p.watchGatewayAPI(ctx)
			}
			p.watchExtensions(ctx)
		}
	}
}

// watch starts (or, before the cache starts, registers) the informer of
// obj's kind and keeps its store. Once the cache runs, it returns when the
// informer has synced.
func (p *Provider) watch(ctx context.Context, obj client.Object) error {
	inf, err := p.cache.GetInformer(ctx, obj)
	if err != nil {
		return err
	}
	if _, err := inf.AddEventHandler(p.handler); err != nil {
		return err
	}
	s, ok := inf.(interface{ GetStore() toolscache.Store })
	if !ok {
		return fmt.Errorf("the informer of %T has no store", obj)
	}
	p.stores[reflect.TypeOf(obj)] = s.GetStore()
	return nil
}

// ignoredUpdate reports an update that cannot change the build, so
// triggers none.
func ignoredUpdate(old, cur any) bool {
	return statusOnly(old, cur) || sameNamespaceLabels(old, cur)
}

// statusOnly reports an update of a kind we write the status of that
// changed nothing but its status (typically our own status write), or of
// a BackendTLSPolicy (whose status other implementations write too; the
// build reads its spec only), or of a kind an extension registered (the only
// unstructured objects: their status is the extension's, or ours for
// policies, and the build hands their spec to the extension).
func statusOnly(old, cur any) bool {
	switch cur.(type) {
	case *unstructured.Unstructured,
		*contourv1.HTTPProxy, *v1alpha1.ExtensionService, *contourv1.TLSCertificateDelegation,
		*gwapiv1.GatewayClass, *gwapiv1.Gateway, *gwapiv1.HTTPRoute, *gwapiv1.GRPCRoute,
		*gwapiv1.TLSRoute, *gwapiv1.TCPRoute, *gwapiv1.UDPRoute, *gwapiv1.ListenerSet,
		*gatewayv1alpha1.ExtAuthPolicy, *gatewayv1alpha1.ExtProcPolicy,
		*gwapiv1.BackendTLSPolicy, *gwapiv1alpha3.BackendTLSPolicy:
	default:
		return false
	}
	o, ok1 := old.(client.Object)
	c, ok2 := cur.(client.Object)
	return ok1 && ok2 && objects.SameButStatus(o, c)
}

// sameNamespaceLabels reports an update of a Namespace that kept its
// labels: the build reads nothing else of a Namespace (allowedRoutes
// selectors), and a Namespace has no generation to tell a status-only
// change by.
func sameNamespaceLabels(old, cur any) bool {
	o, ok1 := old.(*corev1.Namespace)
	c, ok2 := cur.(*corev1.Namespace)
	return ok1 && ok2 && o.UID == c.UID && maps.Equal(o.Labels, c.Labels)
}

// snapshot lists every object from the informers' stores. The objects are
// the stores' own: an object keeps its pointer until it changes, which is
// what lets the builder reuse the roots whose objects did not change
// (builder.Memo); the pipeline never modifies its input.
func (p *Provider) snapshot() *objects.Set {
	set := &objects.Set{
		HTTPProxies:        stored[*contourv1.HTTPProxy](p.stores),
		ExtensionServices:  stored[*v1alpha1.ExtensionService](p.stores),
		Delegations:        stored[*contourv1.TLSCertificateDelegation](p.stores),
		Secrets:            stored[*corev1.Secret](p.stores),
		Services:           stored[*corev1.Service](p.stores),
		EndpointSlices:     stored[*discoveryv1.EndpointSlice](p.stores),
		GatewayClasses:     stored[*gwapiv1.GatewayClass](p.stores),
		Gateways:           stored[*gwapiv1.Gateway](p.stores),
		HTTPRoutes:         stored[*gwapiv1.HTTPRoute](p.stores),
		GRPCRoutes:         stored[*gwapiv1.GRPCRoute](p.stores),
		TLSRoutes:          stored[*gwapiv1.TLSRoute](p.stores),
		TCPRoutes:          stored[*gwapiv1.TCPRoute](p.stores),
		UDPRoutes:          stored[*gwapiv1.UDPRoute](p.stores),
		ListenerSets:       stored[*gwapiv1.ListenerSet](p.stores),
		ReferenceGrants:    referenceGrants(p.stores),
		BackendTLSPolicies: backendTLSPolicies(p.stores),
		ConfigMaps:         stored[*corev1.ConfigMap](p.stores),
		Namespaces:         stored[*corev1.Namespace](p.stores),
		ExtAuthPolicies:    stored[*gatewayv1alpha1.ExtAuthPolicy](p.stores),
		ExtProcPolicies:    stored[*gatewayv1alpha1.ExtProcPolicy](p.stores),
		Extensions:         p.extensionObjects(),
	}
	set.Sort()
	return set
}

// stored returns the objects of kind T from its informer's store (none
// when T is not watched: a Gateway API kind the API server does not serve).
func stored[T client.Object](stores map[reflect.Type]toolscache.Store) []T {
	store := stores[reflect.TypeFor[T]()]
	if store == nil {
		return nil
	}
	items := store.List()
	out := make([]T, 0, len(items))
	for _, it := range items {
		if o, ok := it.(T); ok {
			out = append(out, o)
		}
	}
	return out
}
