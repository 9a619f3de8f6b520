// Package kubernetes reads the control plane's input objects from a
// Kubernetes API server (informers through controller-runtime's cache).
// Their status goes back through internal/statuswriter, with this
// provider's cache and client.
package kubernetes

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/apis/projectcontour/v1alpha1"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// Provider watches the API server.
type Provider struct {
	log    *slog.Logger
	cache  cache.Cache
	client client.Client
	// stores are the informers' stores, by kind (see watched).
	stores map[reflect.Type]toolscache.Store
}

// Cache is the informers' cache, for reads that must not go to the API
// server (the status writer's).
func (p *Provider) Cache() client.Reader { return p.cache }

// Client talks to the API server.
func (p *Provider) Client() client.Client { return p.client }

// New connects to the cluster of kubeconfig (empty: $KUBECONFIG, then the
// in-cluster configuration).
func New(kubeconfig string, log *slog.Logger) (*Provider, error) {
	cfg, err := restConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	c, err := cache.New(cfg, cache.Options{Scheme: objects.Scheme})
	if err != nil {
		return nil, err
	}
	cl, err := client.New(cfg, client.Options{Scheme: objects.Scheme})
	if err != nil {
		return nil, err
	}
	return &Provider{log: log, cache: c, client: cl}, nil
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
	handler := toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { signal() },
		UpdateFunc: func(old, cur any) {
			if !statusOnly(old, cur) {
				signal()
			}
		},
		DeleteFunc: func(any) { signal() },
	}
	p.stores = map[reflect.Type]toolscache.Store{}
	for _, obj := range watched() {
		inf, err := p.cache.GetInformer(ctx, obj)
		if err != nil {
			return fmt.Errorf("watching %T (are the CRDs installed? kubectl apply -f apis/crds/): %w", obj, err)
		}
		if _, err := inf.AddEventHandler(handler); err != nil {
			return err
		}
		s, ok := inf.(interface{ GetStore() toolscache.Store })
		if !ok {
			return fmt.Errorf("the informer of %T has no store", obj)
		}
		p.stores[reflect.TypeOf(obj)] = s.GetStore()
	}
	errc := make(chan error, 1)
	go func() { errc <- p.cache.Start(ctx) }()
	syncCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if !p.cache.WaitForCacheSync(syncCtx) {
		return fmt.Errorf("the informers did not sync: check access to the API server and the RBAC of portcullis")
	}
	p.log.Info("kubernetes informers synced")
	signal()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-errc:
			return err
		case <-changed:
			update(p.snapshot())
		}
	}
}

// statusOnly reports an update of one of our own kinds that changed
// nothing but its status (typically our own status write): it cannot
// change the build, so it triggers none.
func statusOnly(old, cur any) bool {
	switch cur.(type) {
	case *contourv1.HTTPProxy, *v1alpha1.ExtensionService, *contourv1.TLSCertificateDelegation:
	default:
		return false
	}
	o, ok1 := old.(client.Object)
	c, ok2 := cur.(client.Object)
	return ok1 && ok2 && objects.SameButStatus(o, c)
}

// snapshot lists every object from the informers' stores. The objects are
// the stores' own: an object keeps its pointer until it changes, which is
// what lets the builder reuse the roots whose objects did not change
// (builder.Memo); the pipeline never modifies its input.
func (p *Provider) snapshot() *objects.Set {
	set := &objects.Set{
		HTTPProxies:       stored[*contourv1.HTTPProxy](p.stores),
		ExtensionServices: stored[*v1alpha1.ExtensionService](p.stores),
		Delegations:       stored[*contourv1.TLSCertificateDelegation](p.stores),
		Secrets:           stored[*corev1.Secret](p.stores),
		Services:          stored[*corev1.Service](p.stores),
		EndpointSlices:    stored[*discoveryv1.EndpointSlice](p.stores),
	}
	set.Sort()
	return set
}

// stored returns the objects of kind T from its informer's store.
func stored[T client.Object](stores map[reflect.Type]toolscache.Store) []T {
	items := stores[reflect.TypeFor[T]()].List()
	out := make([]T, 0, len(items))
	for _, it := range items {
		if o, ok := it.(T); ok {
			out = append(out, o)
		}
	}
	return out
}
