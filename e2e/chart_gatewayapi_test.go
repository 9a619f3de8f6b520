package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/portcullis/portcullis/e2e/harness"
)

// TestHelmChartGatewayAPICRDs installs the chart for real with helm, to
// check what `helm template` cannot show: the Gateway API CRDs are
// installed by the first release, upgraded by it, skipped by a release
// that finds them from another, and kept on uninstall; the GatewayClass
// can be added once they exist; the release fits Helm's storage.
func TestHelmChartGatewayAPICRDs(t *testing.T) {
	helm := harness.Tool(t, "helm")
	chart := installableChart(t)
	api := harness.StartAPIServer(t, harness.CRDDir(t))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	run := func(args ...string) string {
		t.Helper()
		out, err := harness.RunCommand(helm, append(args, "--kubeconfig", api.KubeconfigPath)...)
		if err != nil {
			t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	crdNames := gatewayAPICRDNames(t)

	run("install", "a", chart, "--namespace", "first", "--create-namespace")
	for _, name := range crdNames {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := api.Client.Get(ctx, client.ObjectKey{Name: name}, &crd); err != nil {
			t.Fatalf("the first release did not install %s: %v", name, err)
		}
		if a := crd.Annotations; a["helm.sh/resource-policy"] != "keep" || a["meta.helm.sh/release-name"] != "a" {
			t.Errorf("%s annotations %v; want kept on uninstall, owned by release a", name, a)
		}
	}
	// Helm keeps a release (chart and rendered manifest) in one Secret of
	// at most 1 MiB; the CRDs are most of it. Keep a margin for the
	// Gateway API's growth.
	var secrets corev1.SecretList
	if err := api.Client.List(ctx, &secrets, client.InNamespace("first")); err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets.Items {
		if n := len(s.Data["release"]); n > 800<<10 {
			t.Errorf("the release Secret %s holds %d KiB, close to the API server's 1 MiB limit", s.Name, n>>10)
		} else {
			t.Logf("release Secret %s: %d KiB", s.Name, n>>10)
		}
	}

	// The upgrade keeps rendering the CRDs (this release owns them) and
	// can now create the GatewayClass.
	run("upgrade", "a", chart, "--namespace", "first", "--set", "gatewayAPI.gatewayClass.create=true")
	if n := strings.Count(run("get", "manifest", "a", "--namespace", "first"), "kind: CustomResourceDefinition"); n != len(crdNames) {
		t.Errorf("release a's upgrade manages %d CRDs, want %d", n, len(crdNames))
	}
	class := &unstructured.Unstructured{}
	class.SetAPIVersion("gateway.networking.k8s.io/v1")
	class.SetKind("GatewayClass")
	if err := api.Client.Get(ctx, client.ObjectKey{Name: "portcullis"}, class); err != nil {
		t.Fatalf("GatewayClass: %v", err)
	}
	if got, _, _ := unstructured.NestedString(class.Object, "spec", "controllerName"); got != "portcullis.dev/gateway-controller" {
		t.Errorf("GatewayClass controllerName %q", got)
	}

	// Another release finds them from release a and leaves them alone.
	run("install", "b", chart, "--namespace", "second", "--create-namespace")
	if strings.Contains(run("get", "manifest", "b", "--namespace", "second"), "kind: CustomResourceDefinition") {
		t.Error("release b took over the CRDs of release a")
	}

	// Uninstalling the release that installed them keeps them (deleting
	// a CRD deletes every object of its kind).
	run("uninstall", "a", "--namespace", "first")
	for _, name := range crdNames {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := api.Client.Get(ctx, client.ObjectKey{Name: name}, &crd); err != nil || crd.DeletionTimestamp != nil {
			t.Errorf("%s after uninstalling release a: %v, deleting %v", name, err, crd.DeletionTimestamp)
		}
	}
}

// installableChart is a copy of the chart that helm installs into the test
// API server: that kube-apiserver, built from source, reports version
// v0.0.0, which the chart's kubeVersion refuses; the copy has no
// kubeVersion. crds/ is copied as files (it is a symbolic link).
func installableChart(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "portcullis")
	if out, err := exec.Command("cp", "-rL", filepath.Join(harness.RepoRoot(t), "charts", "portcullis"), dir).CombinedOutput(); err != nil {
		t.Fatalf("copying the chart: %v\n%s", err, out)
	}
	meta := filepath.Join(dir, "Chart.yaml")
	b, err := os.ReadFile(meta)
	if err != nil {
		t.Fatal(err)
	}
	b = regexp.MustCompile(`(?m)^kubeVersion:.*\n`).ReplaceAll(b, nil)
	if err := os.WriteFile(meta, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// gatewayAPICRDNames are the names of the CRDs in the chart's
// gateway-api-crds/.
func gatewayAPICRDNames(t *testing.T) []string {
	t.Helper()
	var names []string
	for _, f := range yamlFilesIn(t, harness.GatewayAPICRDDir(t)) {
		// gateway.networking.k8s.io_<plural>.yaml holds <plural>.gateway.networking.k8s.io
		group, plural, _ := strings.Cut(strings.TrimSuffix(filepath.Base(f), ".yaml"), "_")
		names = append(names, plural+"."+group)
	}
	return names
}
