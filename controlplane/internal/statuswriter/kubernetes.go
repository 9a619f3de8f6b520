package statuswriter

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/apis/projectcontour/v1alpha1"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// Kubernetes writes statuses through the status subresource of each
// object whose status changed. A conflict or a deleted object is left to
// the next build, which the informer's event triggers.
type Kubernetes struct {
	// Cache is read first (the informers' cache), Client on a conflict
	// and for writes.
	Cache  client.Reader
	Client client.Client
	Log    *slog.Logger
	// GatewayController is this control plane's Gateway API controller
	// name (the configuration's gateway.controllerName; empty:
	// DefaultGatewayController): the route parents naming it are ours to
	// replace.
	GatewayController gwapiv1.GatewayController
	// writes counts status updates sent to the API server.
	writes atomic.Int64
}

// StatusWrites is the number of status updates sent so far: a rebuild
// that changes nothing must not add to it.
func (k *Kubernetes) StatusWrites() int64 { return k.writes.Load() }

// Write updates the objects whose status differs from updates.
func (k *Kubernetes) Write(ctx context.Context, updates []Update) {
	// A few writers in parallel: each write is a round trip.
	const writers = 8
	work := make(chan Update)
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for u := range work {
				k.writeOne(ctx, u)
			}
		})
	}
	for _, u := range updates {
		if ctx.Err() != nil {
			break
		}
		work <- u
	}
	close(work)
	wg.Wait()
}

func (k *Kubernetes) writeOne(ctx context.Context, u Update) {
	key := types.NamespacedName{Namespace: u.Ref.Namespace, Name: u.Ref.Name}
	var err error
	switch {
	case u.HTTPProxy != nil:
		err = writeStatus(ctx, k, key, &contourv1.HTTPProxy{}, func(o *contourv1.HTTPProxy) *contourv1.HTTPProxyStatus { return &o.Status },
			contourMerge(*u.HTTPProxy, func(s *contourv1.HTTPProxyStatus) *[]contourv1.DetailedCondition { return &s.Conditions }))
	case u.ExtensionService != nil:
		err = writeStatus(ctx, k, key, &v1alpha1.ExtensionService{}, func(o *v1alpha1.ExtensionService) *v1alpha1.ExtensionServiceStatus { return &o.Status },
			contourMerge(*u.ExtensionService, func(s *v1alpha1.ExtensionServiceStatus) *[]contourv1.DetailedCondition { return &s.Conditions }))
	case u.Delegation != nil:
		err = writeStatus(ctx, k, key, &contourv1.TLSCertificateDelegation{}, func(o *contourv1.TLSCertificateDelegation) *contourv1.TLSCertificateDelegationStatus {
			return &o.Status
		}, contourMerge(*u.Delegation, func(s *contourv1.TLSCertificateDelegationStatus) *[]contourv1.DetailedCondition { return &s.Conditions }))
	default:
		err = k.writeGatewayAPI(ctx, key, u)
	}
	if err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) && ctx.Err() == nil {
		k.Log.Error("writing status", "object", u.Ref.String(), "err", err)
	}
}

var noDeepCopy = true

// writeStatus reads the object from the cache, merges the status we want
// with its current one (merge) and writes the result through the status
// subresource only when it differs from the current status.
func writeStatus[T client.Object, S any](ctx context.Context, k *Kubernetes, key types.NamespacedName, obj T, statusOf func(T) *S,
	merge func(cur *S) S) error {
	// The cache first; on a conflict (the cache has not seen our previous
	// write yet) the API server itself. Nothing else would retry: our own
	// status updates trigger no rebuild.
	reader := k.Cache
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		defer func() { reader = k.Client }()
		// No deep copy: obj is only read, and copied before a change.
		if err := reader.Get(ctx, key, obj, &client.GetOptions{UnsafeDisableDeepCopy: &noDeepCopy}); err != nil {
			return err
		}
		cur := statusOf(obj)
		merged := merge(cur)
		if equality.Semantic.DeepEqual(*cur, merged) {
			return nil
		}
		k.writes.Add(1)
		cp := obj.DeepCopyObject().(T)
		*statusOf(cp) = merged
		// merged shares slices with the cache's object (other controllers'
		// route parents) and the update (ours); the client decodes the
		// answer into what it sends, so it gets a copy of its own.
		cp = cp.DeepCopyObject().(T)
		return k.Client.Status().Update(ctx, cp)
	})
}

// contourMerge is the merge of the Contour kinds: want, with its conditions
// merged with the current ones (status.MergeConditions: lastTransitionTime
// moves only on a transition, a condition of a newer generation stays,
// other controllers' conditions stay).
func contourMerge[S any](want S, conditions func(*S) *[]contourv1.DetailedCondition) func(cur *S) S {
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	return func(cur *S) S {
		merged := want
		*conditions(&merged) = status.MergeConditions(*conditions(cur), *conditions(&want), now)
		return merged
	}
}
