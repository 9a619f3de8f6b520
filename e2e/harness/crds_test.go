package harness

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// TestGatewayAPICRDsMatchTheModule copies the Gateway API CRDs again from
// the version of sigs.k8s.io/gateway-api the control plane is built
// against (hack/gateway-api-crds.sh) and compares them with the committed
// copy the chart installs: a module upgrade without `make generate` would
// install CRDs of another version than the one the control plane reads.
func TestGatewayAPICRDsMatchTheModule(t *testing.T) {
	root := RepoRoot(t)
	fresh, freshExperimental := t.TempDir(), t.TempDir()
	if out, err := exec.Command("bash", filepath.Join(root, "hack", "gateway-api-crds.sh"), fresh, freshExperimental).CombinedOutput(); err != nil {
		t.Fatalf("hack/gateway-api-crds.sh: %v\n%s", err, out)
	}
	sameFiles(t, fresh, GatewayAPICRDDir(t))
	sameFiles(t, freshExperimental, filepath.Join(root, "charts", "gateway-api-crds-experimental", "crds"))
}

// sameFiles: committed holds the YAML files of fresh, byte for byte.
func sameFiles(t *testing.T, fresh, committed string) {
	t.Helper()
	want, got := yamlFiles(t, fresh), yamlFiles(t, committed)
	if !slices.Equal(want, got) {
		t.Fatalf("%s holds %v, the module has %v: run `make generate`", committed, got, want)
	}
	for _, name := range want {
		a, _ := os.ReadFile(filepath.Join(fresh, name))
		b, _ := os.ReadFile(filepath.Join(committed, name))
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs from the module's copy: run `make generate`", name)
		}
	}
	if len(want) == 0 {
		t.Error("no CRDs copied")
	}
}

func yamlFiles(t *testing.T, dir string) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(paths))
	for i, p := range paths {
		names[i] = filepath.Base(p)
	}
	return names
}

// TestChartCRDsAreTheAPIs: the chart's crds/ are copies of apis/crds
// (hack/generate.sh makes them; a link made Helm warn on every render).
func TestChartCRDsAreTheAPIs(t *testing.T) {
	root := RepoRoot(t)
	sameFiles(t, filepath.Join(root, "apis", "crds"), filepath.Join(root, "charts", "portcullis", "crds"))
}
