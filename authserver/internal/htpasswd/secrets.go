package htpasswd

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
)

// Secret selection, compatible with Contour's authserver.
const (
	AuthTypeAnnotation  = "projectcontour.io/auth-type"
	AuthRealmAnnotation = "projectcontour.io/auth-realm"
	AuthTypeBasic       = "basic"
	SecretKey           = "auth"
)

// SecretsConfig says which Secrets to watch.
type SecretsConfig struct {
	Client kubernetes.Interface
	// Namespaces to watch; empty means all.
	Namespaces []string
	// Selector is a label selector ("" selects all), applied by the API
	// server so that unrelated Secrets never reach this process.
	Selector string
	// SyncTimeout bounds the initial list (RBAC or connectivity problems
	// fail start-up instead of serving with no users).
	SyncTimeout time.Duration
}

// WatchSecrets starts informers for the Secrets cfg names, loads the
// current ones and keeps following changes until ctx ends.
func (s *Server) WatchSecrets(ctx context.Context, cfg SecretsConfig) error {
	if _, err := labels.Parse(cfg.Selector); err != nil {
		return fmt.Errorf("--selector: %w", err)
	}
	namespaces := slices.Compact(slices.Sorted(slices.Values(cfg.Namespaces))) // one informer each
	if len(namespaces) == 0 || slices.Contains(namespaces, metav1.NamespaceAll) {
		namespaces = []string{metav1.NamespaceAll}
	}
	if cfg.SyncTimeout <= 0 {
		cfg.SyncTimeout = time.Minute
	}
	var synced []toolscache.InformerSynced
	for _, ns := range namespaces {
		factory := informers.NewSharedInformerFactoryWithOptions(cfg.Client, 0,
			informers.WithNamespace(ns),
			informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = cfg.Selector }))
		inf := factory.Core().V1().Secrets().Informer()
		// Keep only what selection needs: the informer's cache would
		// otherwise hold every Secret's data (TLS keys, tokens, ...).
		if err := inf.SetTransform(trimSecret); err != nil {
			return err
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    s.secretChanged,
			UpdateFunc: func(_, obj any) { s.secretChanged(obj) },
			DeleteFunc: s.secretDeleted,
		}); err != nil {
			return err
		}
		factory.Start(ctx.Done())
		synced = append(synced, inf.HasSynced)
	}
	syncCtx, cancel := context.WithTimeout(ctx, cfg.SyncTimeout)
	defer cancel()
	if !toolscache.WaitForCacheSync(syncCtx.Done(), synced...) {
		return fmt.Errorf("listing Secrets did not complete within %v: check the kubeconfig and that RBAC allows list and watch on secrets in %v", cfg.SyncTimeout, namespaces)
	}
	return nil
}

// trimSecret drops what no selection needs from a Secret before the
// informer stores it.
func trimSecret(obj any) (any, error) {
	sec, ok := obj.(*corev1.Secret)
	if !ok {
		return obj, nil
	}
	sec.ManagedFields = nil
	for k := range sec.Data {
		if k != SecretKey {
			delete(sec.Data, k)
		}
	}
	sec.StringData = nil
	return sec, nil
}

// selectSecret applies Contour's selection: annotated auth-type basic, a
// realm annotation absent, "*" or one realm, and an "auth" key. It returns
// the realm scope and the htpasswd data.
func selectSecret(sec *corev1.Secret) (realm string, data []byte, ok bool) {
	if sec.Annotations[AuthTypeAnnotation] != AuthTypeBasic {
		return "", nil, false
	}
	data, ok = sec.Data[SecretKey]
	if !ok {
		return "", nil, false
	}
	realm = sec.Annotations[AuthRealmAnnotation]
	if realm == "" {
		realm = AllRealms
	}
	return realm, data, true
}

func (s *Server) secretChanged(obj any) {
	sec, ok := obj.(*corev1.Secret)
	if !ok {
		return
	}
	key := secretKey(sec.Namespace, sec.Name)
	realm, data, ok := selectSecret(sec)
	if !ok {
		s.store.set(key, nil) // no longer selected (or never was)
		return
	}
	if realm != AllRealms {
		if err := ValidRealm(realm); err != nil {
			s.logger.Warn("Secret skipped: bad realm annotation", "secret", sec.Namespace+"/"+sec.Name, "error", err)
			s.metrics.loadErrors.WithLabelValues(reasonMalformed).Inc()
			s.store.set(key, nil)
			return
		}
	}
	s.store.set(key, &source{name: "Secret " + sec.Namespace + "/" + sec.Name, realm: realm,
		data: parse(data, s.opts.AllowInsecureHashes)})
}

func (s *Server) secretDeleted(obj any) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if sec, ok := obj.(*corev1.Secret); ok {
		s.store.set(secretKey(sec.Namespace, sec.Name), nil)
	}
}

func secretKey(namespace, name string) string { return "secret:" + namespace + "/" + name }
