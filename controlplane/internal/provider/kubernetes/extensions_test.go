package kubernetes

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/testapiserver"
)

const examplesGroup = "examples.portcullis.dev"

var (
	basicAuthFilter = schema.GroupVersionKind{Group: examplesGroup, Version: "v1alpha1", Kind: "BasicAuthFilter"}
	// A cluster-scoped registered kind.
	authRealm = schema.GroupVersionKind{Group: examplesGroup, Version: "v1alpha1", Kind: "AuthRealm"}
)

// exampleCRD is a minimal CRD of gvk: any spec, a status subresource.
func exampleCRD(gvk schema.GroupVersionKind, plural string, scope apiextensionsv1.ResourceScope) *apiextensionsv1.CustomResourceDefinition {
	open := &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr(true)}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + gvk.Group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: gvk.Group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Kind: gvk.Kind, ListKind: gvk.Kind + "List"},
			Scope: scope,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: gvk.Version, Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type:       "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": *open, "status": *open},
				}},
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
			}},
		},
	}
}

func installExampleCRDs(t *testing.T, cfg *rest.Config) {
	t.Helper()
	crds := []*apiextensionsv1.CustomResourceDefinition{
		exampleCRD(basicAuthFilter, "basicauthfilters", apiextensionsv1.NamespaceScoped),
		exampleCRD(authRealm, "authrealms", apiextensionsv1.ClusterScoped),
	}
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{CRDs: crds}); err != nil {
		t.Fatal(err)
	}
}

var (
	basicAuthFilters = basicAuthFilter.GroupVersion().WithResource("basicauthfilters")
	authRealms       = authRealm.GroupVersion().WithResource("authrealms")
)

func exampleObject(gvk schema.GroupVersionKind, namespace, name, realm string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"realm": realm, "users": []any{"ann"}}}}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}

// extensions summarizes a snapshot's extension objects: kind
// namespace/name realm, in order.
func extensions(s *objects.Set) string {
	var out []string
	for _, u := range s.Extensions {
		realm, _, _ := unstructured.NestedString(u.Object, "spec", "realm")
		out = append(out, fmt.Sprintf("%s %s/%s %s", u.GetKind(), u.GetNamespace(), u.GetName(), realm))
	}
	return strings.Join(out, ", ")
}

func wantExtensions(want string) func(*objects.Set) error {
	return func(s *objects.Set) error {
		if got := extensions(s); got != want {
			return fmt.Errorf("extension objects %q, want %q", got, want)
		}
		return nil
	}
}

// The kinds the extensions registered are not installed when the provider
// starts: it serves the rest and warns once; installed later, they are
// watched at the next poll (a namespaced and a cluster-scoped kind), their
// objects come and go with the snapshots, and status-only updates trigger
// no rebuild.
func TestExtensionKindsInstalledLater(t *testing.T) {
	api := testapiserver.Start(t, testapiserver.CRDDir(t))
	ctx := context.Background()
	create(t, api.Client, &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p"},
		Spec: contourv1.HTTPProxySpec{VirtualHost: &contourv1.VirtualHost{Fqdn: "p.example.com"}}})
	// Registered twice (two extensions): watched once.
	r := startProvider(t, api.Config, basicAuthFilter, authRealm, basicAuthFilter)
	r.await(t, "HTTPProxies without the extensions' CRDs", func(s *objects.Set) error {
		if len(s.HTTPProxies) != 1 || len(s.Extensions) != 0 {
			return fmt.Errorf("%d HTTPProxies, %d extension objects; want 1 and none", len(s.HTTPProxies), len(s.Extensions))
		}
		return nil
	})
	time.Sleep(500 * time.Millisecond) // a few polls
	logs := r.logs.String()
	if n := strings.Count(logs, "some kinds the extensions registered are not watched"); n != 1 {
		t.Errorf("warned of the missing kinds %d times, want once:\n%s", n, logs)
	}
	if !strings.Contains(logs, "level=WARN") || !strings.Contains(logs, "BasicAuthFilter:not installed") {
		t.Errorf("the warning does not say BasicAuthFilter is not installed:\n%s", logs)
	}

	installExampleCRDs(t, api.Config)
	dyn, err := dynamic.NewForConfig(api.Config)
	if err != nil {
		t.Fatal(err)
	}
	filters := dyn.Resource(basicAuthFilters).Namespace("default")
	if _, err := filters.Create(ctx, exampleObject(basicAuthFilter, "default", "auth", "staff"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(authRealms).Create(ctx, exampleObject(authRealm, "", "corp", "corp"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.await(t, "the extensions' objects once their CRDs are installed",
		wantExtensions("AuthRealm /corp corp, BasicAuthFilter default/auth staff"))
	if !strings.Contains(r.logs.String(), "watching the kinds the extensions registered") {
		t.Errorf("no log of the kinds being watched:\n%s", r.logs.String())
	}

	// A spec change: a new snapshot with it.
	u, err := filters.Get(ctx, "auth", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(u.Object, "admins", "spec", "realm"); err != nil {
		t.Fatal(err)
	}
	if u, err = filters.Update(ctx, u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.await(t, "a spec change", wantExtensions("AuthRealm /corp corp, BasicAuthFilter default/auth admins"))

	// A status write (ours for policies, the extension's): no rebuild.
	if err := unstructured.SetNestedField(u.Object, "Accepted", "status", "phase"); err != nil {
		t.Fatal(err)
	}
	if _, err := filters.UpdateStatus(ctx, u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.quiet(t, "a status write")

	// Deleted: gone.
	if err := filters.Delete(ctx, "auth", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r.await(t, "a deletion", wantExtensions("AuthRealm /corp corp"))
}

// Installed before the start, the registered kinds' objects are in the
// first snapshot.
func TestExtensionKindsInFirstSnapshot(t *testing.T) {
	api := testapiserver.Start(t, testapiserver.CRDDir(t))
	installExampleCRDs(t, api.Config)
	dyn, err := dynamic.NewForConfig(api.Config)
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"default", "kube-system"} {
		if _, err := dyn.Resource(basicAuthFilters).Namespace(ns).Create(context.Background(), exampleObject(basicAuthFilter, ns, "auth", ns), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	r := startProvider(t, api.Config, basicAuthFilter)
	r.await(t, "a first snapshot", func(*objects.Set) error { return nil })
	r.mu.Lock()
	first := r.first
	r.mu.Unlock()
	if got, want := extensions(first), "BasicAuthFilter default/auth default, BasicAuthFilter kube-system/auth kube-system"; got != want {
		t.Errorf("first snapshot's extension objects %q, want %q", got, want)
	}
	if strings.Contains(r.logs.String(), "not watched") {
		t.Errorf("warned of kinds not watched:\n%s", r.logs.String())
	}
}

// Without access to a registered kind the provider serves the rest and says
// what it may not read; granted access, it watches the kind at the next
// poll.
func TestExtensionKindsForbidden(t *testing.T) {
	api := testapiserver.Start(t, testapiserver.CRDDir(t))
	installExampleCRDs(t, api.Config)
	const user = "portcullis-test"
	grant(t, api.Client, "core", user, []rbacv1.PolicyRule{
		{APIGroups: []string{contourv1.GroupName}, Resources: []string{"httpproxies", "extensionservices", "tlscertificatedelegations"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"secrets", "services", "configmaps"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"get", "list", "watch"}},
	})
	dyn, err := dynamic.NewForConfig(api.Config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(basicAuthFilters).Namespace("default").Create(context.Background(), exampleObject(basicAuthFilter, "default", "auth", "staff"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(api.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	r := startProvider(t, cfg, basicAuthFilter)
	r.await(t, "a snapshot without access to the kind", wantExtensions(""))
	if !strings.Contains(r.logs.String(), "forbidden: the control plane may not list and watch basicauthfilters."+examplesGroup) {
		t.Errorf("no log of the missing access:\n%s", r.logs.String())
	}
	grant(t, api.Client, "extensions", user, []rbacv1.PolicyRule{
		{APIGroups: []string{examplesGroup}, Resources: []string{"basicauthfilters"}, Verbs: []string{"get", "list", "watch"}},
	})
	r.await(t, "the kind's objects once granted", wantExtensions("BasicAuthFilter default/auth staff"))
}
