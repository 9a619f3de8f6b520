package kubernetes

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwapiv1alpha3 "sigs.k8s.io/gateway-api/apis/v1alpha3"
	gwapiv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	gatewayv1alpha1 "github.com/portcullis/portcullis/apis/gateway/v1alpha1"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// gatewayPollInterval is how often the provider looks again for the
// Gateway API kinds it does not watch yet (CRDs installed, or RBAC granted,
// after the control plane started).
const gatewayPollInterval = 30 * time.Second

// gatewayKind is a kind of the Gateway API (or one of our policies
// attached to its objects) that the provider watches once the API server
// serves it: versions are the Go types of the versions it can read,
// preferred first.
type gatewayKind struct {
	resource string
	versions []client.Object
}

func gatewayKinds() []gatewayKind {
	return []gatewayKind{
		{"gatewayclasses", []client.Object{&gwapiv1.GatewayClass{}}},
		{"gateways", []client.Object{&gwapiv1.Gateway{}}},
		{"httproutes", []client.Object{&gwapiv1.HTTPRoute{}}},
		{"grpcroutes", []client.Object{&gwapiv1.GRPCRoute{}}},
		// The standard CRDs serve v1 only (v1alpha2 is kept, not served).
		{"tlsroutes", []client.Object{&gwapiv1.TLSRoute{}}},
		{"tcproutes", []client.Object{&gwapiv1.TCPRoute{}}},
		{"udproutes", []client.Object{&gwapiv1.UDPRoute{}}},
		{"listenersets", []client.Object{&gwapiv1.ListenerSet{}}},
		// The standard CRDs serve v1 and v1beta1; older ones only v1beta1.
		{"referencegrants", []client.Object{&gwapiv1.ReferenceGrant{}, &gwapiv1beta1.ReferenceGrant{}}},
		// The standard CRDs serve v1; older experimental ones only
		// v1alpha3 (read as v1; the status is written as v1).
		{"backendtlspolicies", []client.Object{&gwapiv1.BackendTLSPolicy{}, &gwapiv1alpha3.BackendTLSPolicy{}}},
		// Our policies: their CRDs are in apis/crds, but a cluster upgraded
		// from a version without them may not have them yet.
		{"extauthpolicies", []client.Object{&gatewayv1alpha1.ExtAuthPolicy{}}},
		{"extprocpolicies", []client.Object{&gatewayv1alpha1.ExtProcPolicy{}}},
	}
}

// namespaces are watched with the Gateway API only (allowedRoutes
// selectors): a cluster without it keeps needing no access to them.
const namespaces = "namespaces"

// gatewayState is what the provider knows of the Gateway API kinds.
type gatewayState struct {
	interval time.Duration
	// watched maps each watched resource to its group/version.
	watched map[string]string
	// reported is the last summary logged, so that each state is logged
	// once rather than at every poll.
	reported string
}

// watchesGroup reports whether a kind of group is watched.
func (g *gatewayState) watchesGroup(group string) bool {
	for _, gv := range g.watched {
		if strings.HasPrefix(gv, group+"/") {
			return true
		}
	}
	return false
}

// complete reports whether every Gateway API kind (and Namespaces) is watched.
func (g *gatewayState) complete() bool { return len(g.watched) == len(gatewayKinds())+1 }

// watchGatewayAPI starts the informers of the Gateway API kinds the API
// server serves and this control plane may list and watch, of those not
// watched yet, and logs what is missing when that changes. A kind it cannot
// watch is left out of the snapshots; HTTPProxies are served regardless.
func (p *Provider) watchGatewayAPI(ctx context.Context) {
	if p.gateway.watched == nil {
		p.gateway.watched = map[string]string{}
	}
	served, err := p.servedGatewayResources()
	if err != nil {
		p.report(map[string]string{"discovery": err.Error()})
		return
	}
	missing := map[string]string{}
	for _, k := range gatewayKinds() {
		if _, ok := p.gateway.watched[k.resource]; ok {
			continue
		}
		obj, gv := pick(k, served)
		if obj == nil {
			missing[k.resource] = "not installed"
			continue
		}
		if why := p.startGatewayKind(ctx, gv.Group, k.resource, gv.String(), obj); why != "" {
			missing[k.resource] = why
		}
	}
	if _, ok := p.gateway.watched[namespaces]; !ok && p.gateway.watchesGroup(gwapiv1.GroupName) {
		if why := p.startGatewayKind(ctx, "", namespaces, "v1", &corev1.Namespace{}); why != "" {
			missing[namespaces] = why
		}
	}
	p.report(missing)
}

// startGatewayKind watches one resource if this control plane may list and
// watch it, and says why not otherwise. The access review comes first
// because an informer without access never syncs: a deployment whose RBAC
// predates the Gateway API must go on serving HTTPProxies.
func (p *Provider) startGatewayKind(ctx context.Context, group, resource, gv string, obj client.Object) string {
	ok, err := p.mayWatch(ctx, group, resource)
	if err != nil {
		return "access review failed: " + err.Error()
	}
	if !ok {
		return "forbidden: the control plane may not list and watch " + resource
	}
	syncCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := p.watch(syncCtx, obj); err != nil {
		return err.Error()
	}
	p.gateway.watched[resource] = gv
	return ""
}

// servedGatewayResources returns the resources the API server serves in
// each group version of the gatewayKinds not watched yet: a poll asks
// discovery only about what it may still start.
func (p *Provider) servedGatewayResources() (map[schema.GroupVersion]map[string]bool, error) {
	out := map[schema.GroupVersion]map[string]bool{}
	for _, k := range gatewayKinds() {
		if _, ok := p.gateway.watched[k.resource]; ok {
			continue
		}
		for _, obj := range k.versions {
			gvk, err := apiutil.GVKForObject(obj, objects.Scheme)
			if err != nil {
				return nil, err
			}
			if _, seen := out[gvk.GroupVersion()]; !seen {
				if err := p.listServed(gvk.GroupVersion(), out); err != nil {
					return nil, err
				}
			}
		}
	}
	return out, nil
}

// listServed adds the resources of gv to served (none when the API server
// does not serve gv).
func (p *Provider) listServed(gv schema.GroupVersion, served map[schema.GroupVersion]map[string]bool) error {
	served[gv] = map[string]bool{}
	list, err := p.discovery.ServerResourcesForGroupVersion(gv.String())
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, r := range list.APIResources {
		served[gv][r.Name] = true
	}
	return nil
}

// pick returns the first of k's versions the API server serves, and its
// group/version.
func pick(k gatewayKind, served map[schema.GroupVersion]map[string]bool) (client.Object, schema.GroupVersion) {
	for _, obj := range k.versions {
		gvk, err := apiutil.GVKForObject(obj, objects.Scheme)
		if err != nil {
			continue
		}
		if served[gvk.GroupVersion()][k.resource] {
			return obj, gvk.GroupVersion()
		}
	}
	return nil, schema.GroupVersion{}
}

// mayWatch asks the API server whether this control plane may list and
// watch resource in every namespace.
func (p *Provider) mayWatch(ctx context.Context, group, resource string) (bool, error) {
	for _, verb := range []string{"list", "watch"} {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Group: group, Resource: resource, Verb: verb},
		}}
		got, err := p.access.SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		if err != nil {
			return false, err
		}
		if !got.Status.Allowed {
			return false, nil
		}
	}
	return true, nil
}

// report logs the state of the Gateway API when it changed since the last
// report: missing CRDs are normal (a cluster without the Gateway API),
// anything else is a problem to fix.
func (p *Provider) report(missing map[string]string) {
	summary := fmt.Sprint(missing, p.gateway.watched)
	if summary == p.gateway.reported {
		return
	}
	p.gateway.reported = summary
	var notInstalled []string
	for _, k := range gatewayKinds() {
		if missing[k.resource] == "not installed" {
			notInstalled = append(notInstalled, k.resource)
		}
	}
	switch {
	case len(missing) == 0:
		p.log.Info("watching the Gateway API", "versions", p.gateway.watched)
	case len(notInstalled) == len(missing):
		p.log.Info("Gateway API CRDs not installed: serving HTTPProxies and the kinds that are, and watching the others once their CRDs appear",
			"notInstalled", notInstalled, "checkEvery", p.gateway.interval)
	default:
		p.log.Warn("some Gateway API kinds are not watched: the build sees none of their objects; looking again periodically",
			"missing", missing, "watching", p.gateway.watched, "checkEvery", p.gateway.interval)
	}
}

// referenceGrants are the ReferenceGrants of the version watched. A v1beta1
// ReferenceGrant is the v1 type under another name (`type ReferenceGrant
// v1.ReferenceGrant`): its pointer is converted rather than the object
// copied, so that the snapshot holds the store's objects as for every kind.
func referenceGrants(stores map[reflect.Type]toolscache.Store) []*gwapiv1.ReferenceGrant {
	grants := stored[*gwapiv1.ReferenceGrant](stores)
	for _, g := range stored[*gwapiv1beta1.ReferenceGrant](stores) {
		grants = append(grants, (*gwapiv1.ReferenceGrant)(g))
	}
	return grants
}

// backendTLSPolicies are the BackendTLSPolicies of the version watched (a
// v1alpha3 one is the v1 type under another name, converted as
// referenceGrants converts).
func backendTLSPolicies(stores map[reflect.Type]toolscache.Store) []*gwapiv1.BackendTLSPolicy {
	policies := stored[*gwapiv1.BackendTLSPolicy](stores)
	for _, p := range stored[*gwapiv1alpha3.BackendTLSPolicy](stores) {
		policies = append(policies, (*gwapiv1.BackendTLSPolicy)(p))
	}
	return policies
}
