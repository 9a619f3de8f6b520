package kubernetes

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	toolscache "k8s.io/client-go/tools/cache"
)

// extensionState is what the provider knows of the kinds the extension
// servers registered (config ExtensionKinds). They are read as
// unstructured objects, through dynamic informers, once the API server
// serves them and this control plane may list and watch them: like the
// Gateway API's, their CRDs may come after the control plane (they are
// the vendors'), and are looked for again every poll.
type extensionState struct {
	// kinds are the registered kinds, each once, in order.
	kinds []schema.GroupVersionKind
	// stores are the stores of the kinds watched.
	stores map[schema.GroupVersionKind]toolscache.Store
	// stops stop the informers of the kinds watched (they stop with Run's
	// context anyway).
	stops map[schema.GroupVersionKind]context.CancelFunc
	// reported is the last summary logged, so that each state is logged
	// once rather than at every poll.
	reported string
}

func newExtensionState(kinds []schema.GroupVersionKind) extensionState {
	s := extensionState{stores: map[schema.GroupVersionKind]toolscache.Store{}, stops: map[schema.GroupVersionKind]context.CancelFunc{}}
	seen := map[schema.GroupVersionKind]bool{}
	for _, k := range kinds {
		if !seen[k] {
			seen[k] = true
			s.kinds = append(s.kinds, k)
		}
	}
	return s
}

// complete reports whether every registered kind is watched.
func (e *extensionState) complete() bool { return len(e.stores) == len(e.kinds) }

// watchExtensions starts the informers of the registered kinds that the
// API server serves and this control plane may list and watch, of those
// not watched yet (each synced before it returns, so that the next
// snapshot has their objects), and logs what is missing when that changes.
func (p *Provider) watchExtensions(ctx context.Context) {
	if p.ext.complete() {
		return
	}
	missing := map[string]string{}
	served := map[schema.GroupVersion]*metav1.APIResourceList{}
	for _, k := range p.ext.kinds {
		if p.ext.stores[k] != nil {
			continue
		}
		resource, why := p.extensionResource(k, served)
		if why == "" {
			why = p.startExtensionKind(ctx, k, resource)
		}
		if why != "" {
			missing[k.String()] = why
		}
	}
	p.reportExtensions(missing)
}

// extensionResource returns the resource (plural) serving k, or why there
// is none. served caches discovery's answers for one poll.
func (p *Provider) extensionResource(k schema.GroupVersionKind, served map[schema.GroupVersion]*metav1.APIResourceList) (string, string) {
	gv := k.GroupVersion()
	list, ok := served[gv]
	if !ok {
		var err error
		list, err = p.discovery.ServerResourcesForGroupVersion(gv.String())
		switch {
		case apierrors.IsNotFound(err):
			list = &metav1.APIResourceList{}
		case err != nil:
			return "", "discovery failed: " + err.Error()
		}
		served[gv] = list
	}
	for _, r := range list.APIResources {
		if r.Kind == k.Kind && !strings.Contains(r.Name, "/") {
			return r.Name, ""
		}
	}
	return "", "not installed: the API server does not serve it (is its CRD installed, with version " + k.Version + " served?)"
}

// startExtensionKind watches the resource of k (every namespace, or the
// cluster for a cluster-scoped kind) if this control plane may list and
// watch it, and says why not otherwise. The access review comes first
// because an informer without access never syncs.
func (p *Provider) startExtensionKind(ctx context.Context, k schema.GroupVersionKind, resource string) string {
	ok, err := p.mayWatch(ctx, k.Group, resource)
	if err != nil {
		return "access review failed: " + err.Error()
	}
	if !ok {
		return "forbidden: the control plane may not list and watch " + resource + "." + k.Group + " (see the chart's extensions.rbac)"
	}
	gvr := k.GroupVersion().WithResource(resource)
	inf := dynamicinformer.NewFilteredDynamicInformer(p.dynamic, gvr, metav1.NamespaceAll, 0, toolscache.Indexers{}, nil).Informer()
	if _, err := inf.AddEventHandler(p.handler); err != nil {
		return err.Error()
	}
	// The informer runs until Run returns, or until it failed to sync.
	infCtx, stop := context.WithCancel(ctx)
	go inf.RunWithContext(infCtx)
	syncCtx, cancel := context.WithTimeout(infCtx, 2*time.Minute)
	defer cancel()
	if !toolscache.WaitForCacheSync(syncCtx.Done(), inf.HasSynced) {
		stop()
		return "the informer did not sync within 2 minutes"
	}
	p.ext.stores[k], p.ext.stops[k] = inf.GetStore(), stop
	return ""
}

// reportExtensions logs the state of the registered kinds when it changed
// since the last report. A kind not watched is a problem to fix: the
// extension that owns it sees none of its objects.
func (p *Provider) reportExtensions(missing map[string]string) {
	summary := fmt.Sprint(missing, len(p.ext.stores))
	if summary == p.ext.reported {
		return
	}
	p.ext.reported = summary
	watching := make([]string, 0, len(p.ext.stores))
	for _, k := range p.ext.kinds {
		if p.ext.stores[k] != nil {
			watching = append(watching, k.String())
		}
	}
	if len(missing) == 0 {
		p.log.Info("watching the kinds the extensions registered", "kinds", watching)
		return
	}
	p.log.Warn("some kinds the extensions registered are not watched: the build sees none of their objects until they are; looking again periodically",
		"missing", missing, "watching", watching, "checkEvery", p.gateway.interval)
}

// extensionObjects are the objects of every registered kind watched.
func (p *Provider) extensionObjects() []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, k := range p.ext.kinds {
		store := p.ext.stores[k]
		if store == nil {
			continue
		}
		for _, it := range store.List() {
			if u, ok := it.(*unstructured.Unstructured); ok {
				out = append(out, u)
			}
		}
	}
	return out
}
