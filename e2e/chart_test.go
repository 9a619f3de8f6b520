package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/e2e/harness"
)

const chartNamespace = "portcullis-system"

// chartValues are the value sets the chart is checked with: the defaults and
// every optional part switched on.
var chartValues = map[string][]string{
	"defaults": nil,
	"everything": {
		"--set", "authserver.enabled=true",
		"--set", "authserver.htpasswd.watchNamespaces={team-a,team-b}",
		"--set", "extprocserver.enabled=true",
		"--set", "controlPlane.rootNamespaces={team-a}",
		"--set", "controlPlane.config.globalExtAuth.extensionService=portcullis-system/t-portcullis-authserver",
		"--set", "controlPlane.config.globalExtAuth.failOpen=false",
		"--set", "controlPlane.config.gateway.envoyService=portcullis-system/t-portcullis",
		"--set", "controlPlane.config.gateway.servicePerGateway=true",
		"--set", "gatewayAPI.gatewayClass.create=true",
		// Operations: NetworkPolicies and autoscalers.
		"--set", "networkPolicy.enabled=true",
		"--set", "envoy.autoscaling.enabled=true",
		"--set", "authserver.autoscaling.enabled=true",
		// The kinds of an extension server.
		"--set", "extensions.rbac[0].apiGroups={examples.portcullis.dev}",
		"--set", "extensions.rbac[0].resources={basicauthfilters,authrealms}",
		// As if the CRDs were installed (helm template cannot look).
		"--api-versions", "gateway.networking.k8s.io/v1/GatewayClass",
	},
	// The Gateway API CRDs come from elsewhere.
	"no-gateway-api-crds": {
		"--set", "gatewayAPI.installCRDs=false",
	},
	"oidc": {
		"--set", "authserver.enabled=true",
		"--set", "authserver.backend=oidc",
		"--set", "authserver.oidc.issuer=https://id.example.com",
		"--set", "authserver.oidc.clientID=portcullis",
		"--set", "authserver.oidcSecret.name=portcullis-oidc",
	},
	// The values of older charts: oidc's settings under oidc.config.
	"oidc-older-values": {
		"--set", "authserver.enabled=true",
		"--set", "authserver.backend=oidc",
		"--set", "authserver.oidc.config.issuer=https://id.example.com",
		"--set", "authserver.oidc.config.clientID=portcullis",
		"--set", "authserver.oidc.config.cookie.keyEnv=COOKIE_KEY",
	},
	// TLS between Envoy and both servers (TestHelmChartServerTLS checks
	// what it renders).
	"server-tls": {
		"--set", "authserver.enabled=true",
		"--set", "authserver.backend=testserver",
		"--set", "authserver.tls.enabled=true",
		"--set", "extprocserver.enabled=true",
		"--set", "extprocserver.tls.enabled=true",
		"--set", "networkPolicy.enabled=true",
	},
	"testserver": {
		"--set", "authserver.enabled=true",
		"--set", "authserver.backend=testserver",
	},
	// Small installs: each Envoy pod with its own control plane.
	"colocated": {
		"--set", "topology=colocated",
	},
	"daemonset": {
		"--set", "envoy.kind=DaemonSet",
		"--set", "controlPlane.replicas=3",
	},
	// The xDS certificates from cert-manager (whose CRDs the test's API
	// server does not have: its objects are checked here, not created).
	"cert-manager": {
		"--set", "xds.tls.certManager.enabled=true",
	},
}

// authserverConfigs is the config file the chart renders for the
// authserver with each value set: one shape, {<backend>: <settings>}.
var authserverConfigs = map[string]string{
	"everything":        "htpasswd:\n  realm: default\n  watchNamespaces:\n  - team-a\n  - team-b\n",
	"oidc":              "oidc:\n  clientID: portcullis\n  clientSecretFile: /etc/authserver-oidc/client-secret\n  cookie:\n    keyFile: /etc/authserver-oidc/cookie-key\n  issuer: https://id.example.com\n",
	"oidc-older-values": "oidc:\n  clientID: portcullis\n  cookie:\n    keyEnv: COOKIE_KEY\n  issuer: https://id.example.com\n",
	"testserver":        "testserver: {}\n",
}

// TestHelmChart lints the chart, renders it with each value set, creates
// what it renders in a real API server (which validates every object, the
// ExtensionServices against our CRDs), and proves the control plane's RBAC
// is enough: portcullis serve, impersonating the chart's ServiceAccount,
// watches resources and writes an HTTPProxy's status.
func TestHelmChart(t *testing.T) {
	helm := harness.Tool(t, "helm")
	chart := filepath.Join(harness.RepoRoot(t), "charts", "portcullis")
	if out, err := harness.RunCommand(helm, "lint", "--strict", chart); err != nil {
		t.Fatalf("helm lint: %v\n%s", err, out)
	}

	// A newcomer's first command: it renders with helm's defaults alone.
	if out, err := exec.Command(helm, "template", "t", chart).Output(); err != nil || !strings.Contains(string(out), "kind: Deployment") {
		t.Fatalf("helm template with defaults: %v\n%s", err, out)
	}

	// Our CRDs only: the Gateway API's are created from what the chart
	// renders.
	api := harness.StartAPIServer(t, harness.CRDDir(t))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, ns := range []string{chartNamespace, "team-a", "team-b", "team-c"} {
		if err := api.Apply(ctx, &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}

	rendered := map[string][]*unstructured.Unstructured{}
	for name, values := range chartValues {
		args := append([]string{"template", "t", chart, "--namespace", chartNamespace, "--kube-version", "1.37.1"}, values...)
		// stdout only: helm warns on stderr that crds/ is a symbolic link.
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(helm, args...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("helm template (%s): %v\n%s", name, err, stderr.String())
		}
		out := stdout.String()
		objs, err := decodeManifests(out)
		if err != nil {
			t.Fatalf("rendered manifests (%s): %v", name, err)
		}
		rendered[name] = objs
	}
	// The Gateway API CRDs, for real: the GatewayClass needs them.
	installRenderedCRDs(ctx, t, api, rendered["defaults"])
	for name, objs := range rendered {
		// Server-side dry run: the API server validates each object fully
		// (schemas, CRD validation) without keeping it.
		for _, o := range objs {
			if o.GetKind() == "CustomResourceDefinition" || strings.HasPrefix(o.GetAPIVersion(), "cert-manager.io/") {
				continue // created above; cert-manager's: checked by checkCertManager
			}
			if err := api.Client.Create(ctx, o.DeepCopy(), client.DryRunAll); err != nil {
				t.Errorf("%s: %s %s/%s refused by the API server: %v", name, o.GetKind(), o.GetNamespace(), o.GetName(), err)
			}
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	kinds := func(objs []*unstructured.Unstructured) map[string]int {
		m := map[string]int{}
		for _, o := range objs {
			m[o.GetKind()]++
		}
		return m
	}
	gatewayCRDs := len(yamlFilesIn(t, harness.GatewayAPICRDDir(t)))
	if got := kinds(rendered["defaults"]); got["Deployment"] != 2 || got["PodDisruptionBudget"] != 2 || got["Service"] != 2 || got["Role"] != 1 ||
		got["ExtensionService"] != 0 || got["ConfigMap"] != 0 || got["CustomResourceDefinition"] != gatewayCRDs || got["GatewayClass"] != 0 {
		t.Errorf("defaults render %v; want the control plane's and Envoy's Deployments, PDBs and Services, the leader election Role, the %d Gateway API CRDs and no optional parts", got, gatewayCRDs)
	}
	if got := kinds(rendered["everything"]); got["Deployment"] != 4 || got["ExtensionService"] != 2 || got["Role"] != 4 || got["ConfigMap"] != 3 || got["GatewayClass"] != 1 {
		t.Errorf("everything renders %v; want 4 Deployments, 2 ExtensionServices, a Role per watched namespace and the leader election's and the Gateways' Services', 3 ConfigMaps and a GatewayClass", got)
	}
	for _, name := range []string{"defaults", "everything", "daemonset", "cert-manager"} {
		checkSeparate(t, name, rendered[name])
	}
	checkColocated(t, rendered["colocated"])
	checkCertManager(t, rendered["cert-manager"])
	checkOperations(t, rendered["everything"], rendered["defaults"])
	for name, objs := range rendered {
		checkPodHardening(t, name, objs)
	}
	if got := kinds(rendered["no-gateway-api-crds"]); got["CustomResourceDefinition"] != 0 {
		t.Errorf("gatewayAPI.installCRDs=false renders %d CRDs", got["CustomResourceDefinition"])
	}
	for name, want := range authserverConfigs {
		checkAuthserverShape(t, name, rendered[name], want)
	}

	// Create the full release for real, then check what its accounts may do.
	for _, o := range rendered["everything"] {
		if o.GetKind() == "CustomResourceDefinition" {
			continue // created above
		}
		if err := api.Client.Create(ctx, o.DeepCopy()); err != nil {
			t.Fatalf("creating %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
	authSA := "system:serviceaccount:" + chartNamespace + ":t-portcullis-authserver"
	cpSA := "system:serviceaccount:" + chartNamespace + ":t-portcullis"
	for _, c := range []struct {
		user, namespace, verb, resource string
		want                            bool
	}{
		{authSA, "team-a", "watch", "secrets", true},
		{authSA, "team-b", "list", "secrets", true},
		{authSA, "team-c", "list", "secrets", false}, // not a watched namespace
		{authSA, "team-a", "update", "secrets", false},
		{"system:serviceaccount:" + chartNamespace + ":t-portcullis-extprocserver", "team-a", "list", "secrets", false},
		{cpSA, "team-a", "watch", "gateway.networking.k8s.io/httproutes", true},
		{cpSA, "", "list", "gateway.networking.k8s.io/gatewayclasses", true},
		{cpSA, "team-a", "update", "gateway.networking.k8s.io/grpcroutes/status", true},
		{cpSA, "team-a", "watch", "gateway.networking.k8s.io/tlsroutes", true},
		{cpSA, "team-a", "update", "gateway.networking.k8s.io/tlsroutes/status", true},
		{cpSA, "team-a", "watch", "gateway.networking.k8s.io/tcproutes", true},
		{cpSA, "team-a", "watch", "gateway.networking.k8s.io/udproutes", true},
		{cpSA, "team-a", "watch", "gateway.networking.k8s.io/listenersets", true},
		{cpSA, "team-a", "update", "gateway.networking.k8s.io/listenersets/status", true},
		{cpSA, "team-a", "update", "gateway.networking.k8s.io/listenersets", false}, // status only
		{cpSA, "team-a", "update", "gateway.networking.k8s.io/gateways", false},     // status only
		{cpSA, "team-a", "watch", "gateway.networking.k8s.io/referencegrants", true},
		{cpSA, "team-a", "list", "gateway.networking.k8s.io/backendtlspolicies", true},
		{cpSA, "team-a", "update", "gateway.networking.k8s.io/backendtlspolicies/status", true}, // its ancestors
		{cpSA, "team-a", "update", "gateway.networking.k8s.io/backendtlspolicies", false},       // status only
		{cpSA, "team-a", "list", "configmaps", true},                                            // BackendTLSPolicy CA certificates
		{cpSA, "team-a", "update", "configmaps", false},
		{cpSA, "", "watch", "namespaces", true},
		{cpSA, chartNamespace, "create", "services", true}, // gateway.servicePerGateway
		{cpSA, chartNamespace, "delete", "services", true},
		{cpSA, "team-a", "create", "services", false},
		{cpSA, "team-a", "watch", "gateway.portcullis.dev/extauthpolicies", true},
		{cpSA, "team-a", "update", "gateway.portcullis.dev/extprocpolicies/status", true},
		{cpSA, "team-a", "watch", "examples.portcullis.dev/basicauthfilters", true},
		{cpSA, "", "list", "examples.portcullis.dev/authrealms", true},
		{cpSA, "team-a", "patch", "examples.portcullis.dev/basicauthfilters/status", true},
		{cpSA, "team-a", "update", "examples.portcullis.dev/basicauthfilters", false}, // status only
		{cpSA, "team-a", "list", "examples.portcullis.dev/otherfilters", false},       // not listed in the values
		{cpSA, chartNamespace, "update", "coordination.k8s.io/leases", true},          // leader election
		{cpSA, "team-a", "update", "coordination.k8s.io/leases", false},               // in the release's namespace only
	} {
		if got := allowed(ctx, t, api, c.user, c.namespace, c.verb, c.resource); got != c.want {
			t.Errorf("%s may %s %s in %s: %v, want %v", c.user, c.verb, c.resource, c.namespace, got, c.want)
		}
	}

	// The control plane with exactly the chart's permissions.
	kubeconfig := impersonatingKubeconfig(t, api, "system:serviceaccount:"+chartNamespace+":t-portcullis")
	_, _, cpAdmin := harness.StartEnvoyAndControlPlane(t, "--provider", "kubernetes", "--kubeconfig", kubeconfig,
		"--leader-elect", "--leader-elect-namespace", chartNamespace, "--leader-elect-lease-name", "t-portcullis")
	proxy := &contourv1.HTTPProxy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "projectcontour.io/v1", Kind: "HTTPProxy"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "rbac"},
		Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{Fqdn: "rbac.example.com"},
			Routes:      []contourv1.Route{{Services: []contourv1.Service{{Name: "missing", Port: 80}}}},
		},
	}
	if err := api.Apply(ctx, proxy); err != nil {
		t.Fatal(err)
	}
	// The Service is missing on purpose: a status that says so proves the
	// control plane read Services and wrote the HTTPProxy's status.
	harness.Eventually(t, time.Minute, func() error {
		var got contourv1.HTTPProxy
		if err := api.Client.Get(ctx, client.ObjectKeyFromObject(proxy), &got); err != nil {
			return err
		}
		status, reason, err := harness.ValidOf(got.Status)
		if err != nil {
			return err
		}
		if status != "False" || !strings.Contains(strings.ToLower(reason+" "+got.Status.Description), "service") {
			return fmt.Errorf("status %s/%s %q; want Valid=False about the missing service", status, reason, got.Status.Description)
		}
		return nil
	})
	// It writes status as the leader: the Role lets it hold the Lease.
	if v := harness.MetricValue(t, "http://"+cpAdmin+"/metrics", "portcullis_leader"); v != 1 {
		t.Errorf("the control plane with the chart's RBAC does not lead (portcullis_leader %v)", v)
	}
}

// checkAuthserverShape: every backend renders the same ConfigMap and
// Deployment shape, the backend named in the file and the arguments.
func checkAuthserverShape(t *testing.T, name string, objs []*unstructured.Unstructured, wantConfig string) {
	t.Helper()
	backend := strings.SplitN(wantConfig, ":", 2)[0]
	wantArgs := []any{"--address=0.0.0.0:9443", "--metrics-address=0.0.0.0:9090", backend, "--config=/etc/authserver/config.yaml"}
	var sawConfig, sawArgs bool
	for _, o := range objs {
		if o.GetName() != "t-portcullis-authserver" {
			continue
		}
		switch o.GetKind() {
		case "ConfigMap":
			got, _, _ := unstructured.NestedString(o.Object, "data", "config.yaml")
			if got != wantConfig {
				t.Errorf("%s: authserver config.yaml\n%s\nwant\n%s", name, got, wantConfig)
			}
			sawConfig = true
		case "Deployment":
			containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			if len(containers) == 1 {
				args, _, _ := unstructured.NestedSlice(containers[0].(map[string]any), "args")
				if fmt.Sprint(args) != fmt.Sprint(wantArgs) {
					t.Errorf("%s: authserver args %v, want %v", name, args, wantArgs)
				}
				sawArgs = true
			}
		}
	}
	if !sawConfig || !sawArgs {
		t.Errorf("%s: authserver ConfigMap rendered %v, Deployment with one container %v", name, sawConfig, sawArgs)
	}
}

// allowed asks the API server (SubjectAccessReview) whether user may verb
// resource in namespace; resource is [group/]resource[/subresource].
func allowed(ctx context.Context, t *testing.T, api *harness.APIServer, user, namespace, verb, resource string) bool {
	t.Helper()
	attrs := &authorizationv1.ResourceAttributes{Namespace: namespace, Verb: verb, Resource: resource}
	if group, rest, ok := strings.Cut(resource, "/"); ok && strings.Contains(group, ".") {
		attrs.Group, attrs.Resource = group, rest
	}
	attrs.Resource, attrs.Subresource, _ = strings.Cut(attrs.Resource, "/")
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               user,
		Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + chartNamespace, "system:authenticated"},
		ResourceAttributes: attrs,
	}}
	if err := api.Client.Create(ctx, sar); err != nil {
		t.Fatalf("SubjectAccessReview: %v", err)
	}
	return sar.Status.Allowed
}

// impersonatingKubeconfig writes a copy of the admin kubeconfig that acts
// as user, so a process gets exactly that user's RBAC permissions.
func impersonatingKubeconfig(t *testing.T, api *harness.APIServer, user string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(api.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, ai := range cfg.AuthInfos {
		ai.Impersonate = user
		ai.ImpersonateGroups = []string{"system:serviceaccounts", "system:authenticated"}
	}
	path := filepath.Join(t.TempDir(), "kubeconfig-"+strings.ReplaceAll(user, ":", "_"))
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// decodeManifests splits a multi-document YAML stream into objects.
func decodeManifests(data string) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewBufferString(data), 4096)
	var objs []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, err
		}
		if len(m) == 0 {
			continue
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
}

// installRenderedCRDs creates the CRDs among objs and waits until the API
// server serves them.
func installRenderedCRDs(ctx context.Context, t *testing.T, api *harness.APIServer, objs []*unstructured.Unstructured) {
	t.Helper()
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, o := range objs {
		if o.GetKind() != "CustomResourceDefinition" {
			continue
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &crd); err != nil {
			t.Fatal(err)
		}
		if err := api.Client.Create(ctx, &crd); err != nil {
			t.Fatalf("creating the rendered CRD %s: %v", crd.Name, err)
		}
		crds = append(crds, &crd)
	}
	if err := envtest.WaitForCRDs(api.Config, crds, envtest.CRDInstallOptions{MaxTime: time.Minute, PollInterval: 100 * time.Millisecond}); err != nil {
		t.Fatalf("the rendered CRDs are not served: %v", err)
	}
}

func yamlFilesIn(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// With topology colocated the values of the control plane's own pods and
// of xDS over mTLS have nothing to apply to: the chart refuses them rather
// than ignore them.
// Autoscaling a DaemonSet, or with more minimum than maximum replicas, is
// refused with the reason.
func TestHelmChartRefusesBadAutoscaling(t *testing.T) {
	helm := harness.Tool(t, "helm")
	chart := filepath.Join(harness.RepoRoot(t), "charts", "portcullis")
	for _, tc := range []struct {
		set     []string
		wantErr string
	}{
		{[]string{"envoy.kind=DaemonSet", "envoy.autoscaling.enabled=true"}, "envoy.autoscaling needs envoy.kind Deployment"},
		{[]string{"envoy.autoscaling.enabled=true", "envoy.autoscaling.minReplicas=5", "envoy.autoscaling.maxReplicas=3"}, "envoy autoscaling: minReplicas (5) is more than maxReplicas (3)"},
		{[]string{"extprocserver.enabled=true", "extprocserver.autoscaling.enabled=true", "extprocserver.autoscaling.minReplicas=9"}, "extprocserver autoscaling: minReplicas (9) is more than maxReplicas (5)"},
	} {
		args := []string{"template", "t", chart}
		for _, v := range tc.set {
			args = append(args, "--set", v)
		}
		out, err := exec.Command(helm, args...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), tc.wantErr) {
			t.Errorf("%v: %v, want an error %q\n%s", tc.set, err, tc.wantErr, out)
		}
	}
}

func TestHelmChartColocatedRefusesSeparateValues(t *testing.T) {
	helm := harness.Tool(t, "helm")
	chart := filepath.Join(harness.RepoRoot(t), "charts", "portcullis")
	for _, tc := range []struct{ set, wantErr string }{
		{"controlPlane.nodeSelector.disk=ssd", "controlPlane.nodeSelector applies to topology separate only"},
		{"controlPlane.tolerations[0].operator=Exists", "controlPlane.tolerations applies to topology separate only"},
		{"controlPlane.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight=1", "controlPlane.affinity applies"},
		{"controlPlane.podAnnotations.a=b", "controlPlane.podAnnotations applies"},
		{"xds.tls.certManager.enabled=true", "xds.tls applies to topology separate only"},
		{"xds.tls.serverSecret=mine", "xds.tls applies"},
		{"xds.tls.clientSecret=mine", "xds.tls applies"},
		{"xds.tls.certManager.issuer.name=corp", "xds.tls applies"},
	} {
		out, err := exec.Command(helm, "template", "t", chart, "--set", "topology=colocated", "--set", tc.set).CombinedOutput()
		if err == nil || !strings.Contains(string(out), tc.wantErr) {
			t.Errorf("colocated with %s: %v, want an error %q\n%s", tc.set, err, tc.wantErr, out)
		}
		// The same value with topology separate renders.
		if out, err := exec.Command(helm, "template", "t", chart, "--set", tc.set).CombinedOutput(); err != nil {
			t.Errorf("separate with %s: %v\n%s", tc.set, err, out)
		}
	}
}

// TestHelmChartExperimentalCRDs: the chart of the experimental channel's
// CRDs lints, and its HTTPRoute has a rule's retry, which the standard
// CRDs of the portcullis chart prune.
func TestHelmChartExperimentalCRDs(t *testing.T) {
	helm := harness.Tool(t, "helm")
	root := harness.RepoRoot(t)
	experimental := filepath.Join(root, "charts", "gateway-api-crds-experimental")
	if out, err := exec.Command(helm, "lint", "--strict", experimental).CombinedOutput(); err != nil {
		t.Fatalf("helm lint: %v\n%s", err, out)
	}
	for chart, wantRetry := range map[string]bool{filepath.Join(root, "charts", "portcullis"): false, experimental: true} {
		out, err := exec.Command(helm, "template", "t", chart, "--include-crds").CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", chart, err, out)
		}
		if got := strings.Contains(string(out), " retry:\n"); got != wantRetry {
			t.Errorf("%s: an HTTPRoute rule's retry in the CRDs: %v, want %v", chart, got, wantRetry)
		}
	}
}
