// Package kubernetes reads the control plane's input objects from a
// Kubernetes API server (informers through controller-runtime's cache) and
// writes their status back through the status subresource.
package kubernetes

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/apis/projectcontour/v1alpha1"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/pipeline"
	statusmodel "github.com/portcullis/portcullis/controlplane/internal/status"
)

// Provider watches the API server.
type Provider struct {
	log    *slog.Logger
	cache  cache.Cache
	client client.Client
	// writes counts status updates sent to the API server.
	writes atomic.Int64
	// stores are the informers' stores, by kind (see watched).
	stores map[reflect.Type]toolscache.Store
}

// StatusWrites is the number of status updates sent so far: a rebuild
// that changes nothing must not add to it.
func (p *Provider) StatusWrites() int64 { return p.writes.Load() }

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

var noDeepCopy = true

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

// Write updates the status subresource of each object whose status
// changed. A conflict or a deleted object is left to the next build, which
// the informer's event triggers.
func (p *Provider) Write(ctx context.Context, statuses []pipeline.ObjectStatus) {
	// A few writers in parallel: each write is a round trip.
	const writers = 8
	work := make(chan pipeline.ObjectStatus)
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for s := range work {
				p.writeOne(ctx, s)
			}
		})
	}
	for _, s := range statuses {
		if ctx.Err() != nil {
			break
		}
		work <- s
	}
	close(work)
	wg.Wait()
}

func (p *Provider) writeOne(ctx context.Context, s pipeline.ObjectStatus) {
	key := types.NamespacedName{Namespace: s.Namespace, Name: s.Name}
	var err error
	switch st := s.Status.(type) {
	case contourv1.HTTPProxyStatus:
		err = writeStatus(ctx, p, key, &contourv1.HTTPProxy{}, func(o *contourv1.HTTPProxy) *contourv1.HTTPProxyStatus { return &o.Status },
			func(s *contourv1.HTTPProxyStatus) *[]contourv1.DetailedCondition { return &s.Conditions }, st)
	case v1alpha1.ExtensionServiceStatus:
		err = writeStatus(ctx, p, key, &v1alpha1.ExtensionService{}, func(o *v1alpha1.ExtensionService) *v1alpha1.ExtensionServiceStatus { return &o.Status },
			func(s *v1alpha1.ExtensionServiceStatus) *[]contourv1.DetailedCondition { return &s.Conditions }, st)
	case contourv1.TLSCertificateDelegationStatus:
		err = writeStatus(ctx, p, key, &contourv1.TLSCertificateDelegation{}, func(o *contourv1.TLSCertificateDelegation) *contourv1.TLSCertificateDelegationStatus {
			return &o.Status
		}, func(s *contourv1.TLSCertificateDelegationStatus) *[]contourv1.DetailedCondition { return &s.Conditions }, st)
	}
	if err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) && ctx.Err() == nil {
		p.log.Error("writing status", "kind", s.Kind, "object", key.String(), "err", err)
	}
}

// writeStatus reads the object from the cache, merges want with its
// current conditions (status.Merge: lastTransitionTime moves only on a
// transition, other controllers' conditions stay) and writes the result
// through the status subresource only when it differs from the current
// status.
func writeStatus[T client.Object, S any](ctx context.Context, p *Provider, key types.NamespacedName, obj T, status func(T) *S,
	conditions func(*S) *[]contourv1.DetailedCondition, want S) error {
	// The cache first; on a conflict (the cache has not seen our previous
	// write yet) the API server itself. Nothing else would retry: our own
	// status updates trigger no rebuild.
	var reader client.Reader = p.cache
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		defer func() { reader = p.client }()
		// No deep copy: obj is only read, and copied before a change.
		if err := reader.Get(ctx, key, obj, &client.GetOptions{UnsafeDisableDeepCopy: &noDeepCopy}); err != nil {
			return err
		}
		cur := status(obj)
		merged := want
		*conditions(&merged) = statusmodel.Merge(*conditions(cur), *conditions(&want))
		if equality.Semantic.DeepEqual(*cur, merged) {
			return nil
		}
		p.writes.Add(1)
		cp := obj.DeepCopyObject().(T)
		*status(cp) = merged
		return p.client.Status().Update(ctx, cp)
	})
}
