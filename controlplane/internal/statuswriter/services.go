package statuswriter

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// Services keeps the Gateways' Services (gateway.servicePerGateway) as
// the build wants them: in Namespace (Envoy's), those labelled
// objects.GatewayServiceLabel are created, updated (ports, type,
// selector, labels, annotations; what the API server fills in is kept)
// and deleted when no Gateway wants them any more.
type Services struct {
	// Cache is read (the informers' cache: a build compares at no cost),
	// Client written; Client is read too when Cache is nil.
	Cache     client.Reader
	Client    client.Client
	Namespace string
	Log       *slog.Logger
}

// Apply makes the Services what want says, writing only what differs. It
// runs on one goroutine.
func (s *Services) Apply(ctx context.Context, want []*corev1.Service) error {
	var have corev1.ServiceList
	read := s.Cache
	if read == nil {
		read = s.Client
	}
	if err := read.List(ctx, &have, client.InNamespace(s.Namespace), client.HasLabels{objects.GatewayServiceLabel}); err != nil {
		return err
	}
	existing := map[string]*corev1.Service{}
	for i := range have.Items {
		existing[have.Items[i].Name] = &have.Items[i]
	}
	var errs []error
	for _, w := range want {
		cur := existing[w.Name]
		delete(existing, w.Name)
		switch {
		case cur == nil:
			if err := s.Client.Create(ctx, w.DeepCopy()); apierrors.IsAlreadyExists(err) {
				continue // created a moment ago, not in the cache yet
			} else if err != nil {
				errs = append(errs, err)
				continue
			}
			s.Log.Info("created the Service of a Gateway", "service", w.Namespace+"/"+w.Name, "gateway", w.Annotations[objects.GatewayServiceAnnotation])
		case !sameService(cur, w):
			// Labels and annotations others add (a load balancer
			// controller's) are kept: only ours are set.
			upd := cur.DeepCopy()
			upd.Labels, upd.Annotations = withKeys(upd.Labels, w.Labels), withKeys(upd.Annotations, w.Annotations)
			upd.Spec.Type, upd.Spec.Selector, upd.Spec.Ports = w.Spec.Type, w.Spec.Selector, w.Spec.Ports
			upd.Spec.ExternalTrafficPolicy = w.Spec.ExternalTrafficPolicy
			upd.Spec.LoadBalancerSourceRanges = w.Spec.LoadBalancerSourceRanges
			if err := s.Client.Update(ctx, upd); err != nil {
				errs = append(errs, err)
				continue
			}
			s.Log.Info("updated the Service of a Gateway", "service", w.Namespace+"/"+w.Name)
		}
	}
	for _, old := range existing {
		if err := s.Client.Delete(ctx, old); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
			continue
		}
		s.Log.Info("deleted the Service of a Gateway gone", "service", old.Namespace+"/"+old.Name)
	}
	return errors.Join(errs...)
}

// sameService: cur already is what w asks (ports compared without what
// the API server fills in: node ports, default protocols).
func sameService(cur, w *corev1.Service) bool {
	if cur.Spec.Type != w.Spec.Type || !maps.Equal(cur.Spec.Selector, w.Spec.Selector) ||
		!hasKeys(cur.Labels, w.Labels) || !hasKeys(cur.Annotations, w.Annotations) ||
		!slices.Equal(cur.Spec.LoadBalancerSourceRanges, w.Spec.LoadBalancerSourceRanges) ||
		(w.Spec.ExternalTrafficPolicy != "" && cur.Spec.ExternalTrafficPolicy != w.Spec.ExternalTrafficPolicy) ||
		len(cur.Spec.Ports) != len(w.Spec.Ports) {
		return false
	}
	for i, p := range w.Spec.Ports {
		c := cur.Spec.Ports[i]
		if c.Name != p.Name || c.Port != p.Port || c.TargetPort != p.TargetPort || c.Protocol != p.Protocol {
			return false
		}
	}
	return true
}

// hasKeys: have holds every key of want with its value.
func hasKeys(have, want map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// withKeys is have with want's keys set to want's values.
func withKeys(have, want map[string]string) map[string]string {
	out := maps.Clone(have)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, want)
	return out
}
