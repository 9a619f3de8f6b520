package kubernetes

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwapiv1alpha3 "sigs.k8s.io/gateway-api/apis/v1alpha3"
	gwapiv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
	"sigs.k8s.io/yaml"

	gatewayv1alpha1 "github.com/portcullis/portcullis/apis/gateway/v1alpha1"
	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/testapiserver"
)

// run is a provider running against an API server, with what it logged and
// the snapshots it produced.
type run struct {
	logs    syncBuffer
	mu      sync.Mutex
	updates int
	first   *objects.Set
	last    *objects.Set
}

// startProvider runs a provider with cfg's credentials until the test ends,
// looking for the Gateway API (and the extensionKinds) every 100 ms instead
// of 30 s.
func startProvider(t *testing.T, cfg *rest.Config, extensionKinds ...schema.GroupVersionKind) *run {
	t.Helper()
	r := &run{}
	p, err := newProvider(cfg, slog.New(slog.NewTextHandler(&r.logs, nil)), extensionKinds...)
	if err != nil {
		t.Fatal(err)
	}
	p.gateway.interval = 100 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- p.Run(ctx, func(s *objects.Set) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.updates++
			if r.first == nil {
				r.first = s
			}
			r.last = s
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return r
}

func (r *run) state() (int, *objects.Set) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.updates, r.last
}

// await waits until the last snapshot satisfies ok (returning nil).
func (r *run) await(t *testing.T, what string, ok func(*objects.Set) error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var err error
	for time.Now().Before(deadline) {
		_, s := r.state()
		if s == nil {
			err = fmt.Errorf("no snapshot yet")
		} else if err = ok(s); err == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: %v\nlogs:\n%s", what, err, r.logs.String())
}

// quiet checks that no snapshot comes within a second (after a change that
// must not trigger a rebuild).
func (r *run) quiet(t *testing.T, what string) {
	t.Helper()
	before, _ := r.state()
	time.Sleep(time.Second)
	if after, _ := r.state(); after != before {
		t.Errorf("%s triggered %d rebuilds, want none", what, after-before)
	}
}

// Without the Gateway API CRDs the provider serves HTTPProxies and says so
// once; CRDs installed later are watched within the poll interval, and
// status-only updates of their objects trigger no rebuild.
func TestGatewayAPIInstalledLater(t *testing.T) {
	api := testapiserver.Start(t, testapiserver.CRDDir(t))
	ctx := context.Background()
	create(t, api.Client, &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p"},
		Spec: contourv1.HTTPProxySpec{VirtualHost: &contourv1.VirtualHost{Fqdn: "p.example.com"}}})
	r := startProvider(t, api.Config)
	r.await(t, "HTTPProxy without the Gateway API", func(s *objects.Set) error {
		if len(s.HTTPProxies) != 1 || len(s.Namespaces) != 0 {
			return fmt.Errorf("%d HTTPProxies, %d Namespaces; want 1 and none", len(s.HTTPProxies), len(s.Namespaces))
		}
		return nil
	})
	time.Sleep(500 * time.Millisecond) // a few polls
	if n := strings.Count(r.logs.String(), "Gateway API CRDs not installed"); n != 1 {
		t.Errorf("logged the missing CRDs %d times, want once:\n%s", n, r.logs.String())
	}

	if _, err := envtest.InstallCRDs(api.Config, envtest.CRDInstallOptions{Paths: []string{testapiserver.GatewayAPICRDDir(t)}}); err != nil {
		t.Fatal(err)
	}
	create(t, api.Client, gatewayObjects()...)
	r.await(t, "Gateway API objects after the CRDs were installed", func(s *objects.Set) error {
		got := fmt.Sprintf("%d %d %d %d %d %d %d %d %s", len(s.GatewayClasses), len(s.Gateways), len(s.HTTPRoutes), len(s.GRPCRoutes), len(s.ReferenceGrants),
			len(s.BackendTLSPolicies), len(s.ExtAuthPolicies), len(s.ExtProcPolicies), namespaceLabel(s, "team-a"))
		if want := "1 1 1 1 1 1 1 1 yes"; got != want {
			return fmt.Errorf("classes, gateways, HTTPRoutes, GRPCRoutes, grants, BackendTLSPolicies, ExtAuthPolicies, ExtProcPolicies, labelled namespace = %s, want %s", got, want)
		}
		return nil
	})
	if !strings.Contains(r.logs.String(), "watching the Gateway API") {
		t.Errorf("no log of the Gateway API being watched:\n%s", r.logs.String())
	}

	// Our own status writes come back as updates; they change no build.
	gw := &gwapiv1.Gateway{}
	get(t, api.Client, client.ObjectKey{Namespace: "team-a", Name: "gw"}, gw)
	gw.Status.Conditions = []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", LastTransitionTime: metav1.Now()}}
	if err := api.Client.Status().Update(ctx, gw); err != nil {
		t.Fatal(err)
	}
	r.quiet(t, "a Gateway status write")

	// Of a Namespace, only labels count.
	ns := &corev1.Namespace{}
	get(t, api.Client, client.ObjectKey{Name: "team-a"}, ns)
	ns.Annotations = map[string]string{"note": "x"}
	update(t, api.Client, ns)
	r.quiet(t, "a Namespace annotation")
	ns.Labels["shared"] = "no"
	update(t, api.Client, ns)
	r.await(t, "a Namespace label change", func(s *objects.Set) error {
		for _, n := range s.Namespaces {
			if n.Name == "team-a" && n.Labels["shared"] == "no" {
				return nil
			}
		}
		return fmt.Errorf("team-a's new label not seen")
	})
}

// Where the API server serves ReferenceGrant only as v1beta1 (older CRDs),
// the provider reads that version, as v1 objects.
func TestReferenceGrantV1beta1(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"gatewayclasses", "gateways", "httproutes", "grpcroutes", "referencegrants"} {
		b, err := os.ReadFile(filepath.Join(testapiserver.GatewayAPICRDDir(t), "gateway.networking.k8s.io_"+f+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if f == "referencegrants" {
			b = onlyVersion(t, b, "v1beta1")
		}
		if err := os.WriteFile(filepath.Join(dir, f+".yaml"), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	api := testapiserver.Start(t, testapiserver.CRDDir(t), dir)
	create(t, api.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}, &gwapiv1beta1.ReferenceGrant{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "old"},
		Spec: gwapiv1.ReferenceGrantSpec{
			From: []gwapiv1.ReferenceGrantFrom{{Group: gwapiv1.GroupName, Kind: "HTTPRoute", Namespace: "default"}},
			To:   []gwapiv1.ReferenceGrantTo{{Kind: "Service"}},
		},
	})
	r := startProvider(t, api.Config)
	r.await(t, "a v1beta1 ReferenceGrant", func(s *objects.Set) error {
		if len(s.ReferenceGrants) != 1 || s.ReferenceGrants[0].Name != "old" || s.ReferenceGrants[0].Spec.From[0].Kind != "HTTPRoute" {
			return fmt.Errorf("grants %v", s.ReferenceGrants)
		}
		return nil
	})
}

// Where the API server serves BackendTLSPolicy only as v1alpha3 (older
// experimental CRDs), the provider reads that version, as v1 objects: the
// backends they target must fail closed whichever version is served.
func TestBackendTLSPolicyV1alpha3(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"gatewayclasses", "gateways", "httproutes", "grpcroutes", "referencegrants", "backendtlspolicies"} {
		b, err := os.ReadFile(filepath.Join(testapiserver.GatewayAPICRDDir(t), "gateway.networking.k8s.io_"+f+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if f == "backendtlspolicies" {
			b = onlyVersion(t, b, "v1alpha3")
		}
		if err := os.WriteFile(filepath.Join(dir, f+".yaml"), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	api := testapiserver.Start(t, testapiserver.CRDDir(t), dir)
	create(t, api.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}, &gwapiv1alpha3.BackendTLSPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "old"},
		Spec:       backendTLSPolicySpec("echo"),
	})
	r := startProvider(t, api.Config)
	r.await(t, "a v1alpha3 BackendTLSPolicy", func(s *objects.Set) error {
		if len(s.BackendTLSPolicies) != 1 || s.BackendTLSPolicies[0].Name != "old" || s.BackendTLSPolicies[0].Spec.TargetRefs[0].Name != "echo" {
			return fmt.Errorf("BackendTLSPolicies %v", s.BackendTLSPolicies)
		}
		return nil
	})
}

func backendTLSPolicySpec(service string) gwapiv1.BackendTLSPolicySpec {
	return gwapiv1.BackendTLSPolicySpec{
		TargetRefs: []gwapiv1.LocalPolicyTargetReferenceWithSectionName{{LocalPolicyTargetReference: gwapiv1.LocalPolicyTargetReference{
			Group: "", Kind: "Service", Name: gwapiv1.ObjectName(service)}}},
		Validation: gwapiv1.BackendTLSPolicyValidation{Hostname: "echo.example.com", WellKnownCACertificates: ptr(gwapiv1.WellKnownCACertificatesSystem)},
	}
}

func ptr[T any](v T) *T { return &v }

// A control plane whose RBAC predates the Gateway API serves HTTPProxies
// and says what it may not read; granted access, it watches the Gateway
// API at the next poll.
func TestGatewayAPIForbidden(t *testing.T) {
	api := testapiserver.Start(t, testapiserver.CRDDir(t), testapiserver.GatewayAPICRDDir(t))
	const user = "portcullis-test"
	grant(t, api.Client, "core", user, []rbacv1.PolicyRule{
		{APIGroups: []string{contourv1.GroupName}, Resources: []string{"httpproxies", "extensionservices", "tlscertificatedelegations"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"secrets", "services", "configmaps"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"get", "list", "watch"}},
	})
	create(t, api.Client, &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p"},
		Spec: contourv1.HTTPProxySpec{VirtualHost: &contourv1.VirtualHost{Fqdn: "p.example.com"}}})
	create(t, api.Client, gatewayObjects()...)
	cfg := rest.CopyConfig(api.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	r := startProvider(t, cfg)
	r.await(t, "HTTPProxies without access to the Gateway API", func(s *objects.Set) error {
		if len(s.HTTPProxies) != 1 || len(s.Gateways) != 0 {
			return fmt.Errorf("%d HTTPProxies, %d Gateways; want 1 and none", len(s.HTTPProxies), len(s.Gateways))
		}
		return nil
	})
	if !strings.Contains(r.logs.String(), "forbidden: the control plane may not list and watch gateways") {
		t.Errorf("no log of the missing access:\n%s", r.logs.String())
	}
	grant(t, api.Client, "gateway", user, []rbacv1.PolicyRule{
		{APIGroups: []string{gwapiv1.GroupName}, Resources: []string{"gatewayclasses", "gateways", "httproutes", "grpcroutes", "tlsroutes", "tcproutes", "udproutes", "listenersets", "referencegrants", "backendtlspolicies"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{gatewayv1alpha1.GroupVersion.Group}, Resources: []string{"extauthpolicies", "extprocpolicies"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "watch"}},
	})
	r.await(t, "Gateway API objects once granted", func(s *objects.Set) error {
		if len(s.Gateways) != 1 || len(s.HTTPRoutes) != 1 || namespaceLabel(s, "team-a") != "yes" {
			return fmt.Errorf("%d Gateways, %d HTTPRoutes, team-a labelled: %s", len(s.Gateways), len(s.HTTPRoutes), namespaceLabel(s, "team-a"))
		}
		return nil
	})
}

// gatewayObjects are one object of each Gateway API kind, in a labelled
// namespace.
func gatewayObjects() []client.Object {
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: "team-a", Name: name} }
	parent := []gwapiv1.ParentReference{{Name: "gw"}}
	target := []gwapiv1.LocalPolicyTargetReferenceWithSectionName{{LocalPolicyTargetReference: gwapiv1.LocalPolicyTargetReference{
		Group: gwapiv1.GroupName, Kind: "Gateway", Name: "gw"}}}
	return []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a", Labels: map[string]string{"shared": "yes"}}},
		&gwapiv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "portcullis"}, Spec: gwapiv1.GatewayClassSpec{ControllerName: "portcullis.dev/gateway-controller"}},
		&gwapiv1.Gateway{ObjectMeta: meta("gw"), Spec: gwapiv1.GatewaySpec{GatewayClassName: "portcullis",
			Listeners: []gwapiv1.Listener{{Name: "http", Port: 80, Protocol: gwapiv1.HTTPProtocolType}}}},
		&gwapiv1.HTTPRoute{ObjectMeta: meta("web"), Spec: gwapiv1.HTTPRouteSpec{CommonRouteSpec: gwapiv1.CommonRouteSpec{ParentRefs: parent}}},
		&gwapiv1.GRPCRoute{ObjectMeta: meta("rpc"), Spec: gwapiv1.GRPCRouteSpec{CommonRouteSpec: gwapiv1.CommonRouteSpec{ParentRefs: parent}}},
		&gwapiv1.ReferenceGrant{ObjectMeta: meta("grant"), Spec: gwapiv1.ReferenceGrantSpec{
			From: []gwapiv1.ReferenceGrantFrom{{Group: gwapiv1.GroupName, Kind: "HTTPRoute", Namespace: "default"}},
			To:   []gwapiv1.ReferenceGrantTo{{Kind: "Service"}},
		}},
		&gwapiv1.BackendTLSPolicy{ObjectMeta: meta("tls"), Spec: backendTLSPolicySpec("echo")},
		&gatewayv1alpha1.ExtAuthPolicy{ObjectMeta: meta("no-auth"), Spec: gatewayv1alpha1.ExtAuthPolicySpec{TargetRefs: target, Disabled: true}},
		&gatewayv1alpha1.ExtProcPolicy{ObjectMeta: meta("no-proc"), Spec: gatewayv1alpha1.ExtProcPolicySpec{TargetRefs: target, Disabled: true}},
	}
}

func namespaceLabel(s *objects.Set, name string) string {
	for _, n := range s.Namespaces {
		if n.Name == name {
			return n.Labels["shared"]
		}
	}
	return "(no namespace)"
}

// onlyVersion returns a CRD with only version served (and stored).
func onlyVersion(t *testing.T, b []byte, version string) []byte {
	t.Helper()
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(b, &crd); err != nil {
		t.Fatal(err)
	}
	for i := range crd.Spec.Versions {
		crd.Spec.Versions[i].Served = crd.Spec.Versions[i].Name == version
		crd.Spec.Versions[i].Storage = crd.Spec.Versions[i].Name == version
	}
	out, err := yaml.Marshal(&crd)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// grant gives user the rules cluster-wide.
func grant(t *testing.T, c client.Client, name, user string, rules []rbacv1.PolicyRule) {
	t.Helper()
	create(t, c,
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}})
}

func create(t *testing.T, c client.Client, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := c.Create(context.Background(), o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
}

func get(t *testing.T, c client.Client, key client.ObjectKey, o client.Object) {
	t.Helper()
	if err := c.Get(context.Background(), key, o); err != nil {
		t.Fatal(err)
	}
}

func update(t *testing.T, c client.Client, o client.Object) {
	t.Helper()
	if err := c.Update(context.Background(), o); err != nil {
		t.Fatal(err)
	}
}

// syncBuffer is a bytes.Buffer for a logger and a reader on other
// goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
