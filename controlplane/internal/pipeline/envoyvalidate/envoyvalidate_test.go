package envoyvalidate

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/pipeline"
	"github.com/portcullis/portcullis/controlplane/internal/pipeline/goldencase"
	"github.com/portcullis/portcullis/controlplane/internal/translator"
)

// testdata holds the golden cases, the pipeline's.
const testdata = "../testdata"

// TestEnvoyValidatesGoldens loads the xDS output of every golden case into
// the real Envoy (`envoy --mode validate`) as a static bootstrap: what the
// golden tests pin down must also be configuration Envoy accepts. A case
// whose routes name a cluster the model does not have on purpose (an
// invalid Gateway API backend, answered 500) is loaded the way RDS loads
// it, without checking route clusters (TestEnvoyValidatesTranslatorFeatures).
func TestEnvoyValidatesGoldens(t *testing.T) {
	envoy := envoyBinary(t)
	dirs, err := goldencase.Runnable(testdata)
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			res := run(t, dir)
			if out, err := validateResources(t, envoy, res.Resources, namesMissingCluster(res.Build.Model)); err != nil {
				t.Fatalf("Envoy rejects the configuration of %s: %v\n%s", dir, err, out)
			}
		})
	}
}

// TestEnvoyValidateCanFail shows that the check above has teeth: the same
// bootstrap without its clusters is rejected (routes and ext_authz name
// clusters that do not exist).
func TestEnvoyValidateCanFail(t *testing.T) {
	envoy := envoyBinary(t)
	b, err := staticBootstrap(run(t, filepath.Join(testdata, "global-ext-auth-rules")).Resources)
	if err != nil {
		t.Fatal(err)
	}
	b.StaticResources.Clusters = nil
	out, err := envoyValidate(t, envoy, b)
	if err == nil {
		t.Fatalf("Envoy accepted routes to clusters that do not exist:\n%s", out)
	}
	if !strings.Contains(string(out), "unknown cluster") {
		t.Fatalf("Envoy rejected the configuration for another reason than the missing clusters:\n%s", out)
	}
}

// run runs one golden case through the pipeline. Only cases whose input
// loads are validated (goldencase.Runnable), so a load error fails.
func run(t *testing.T, dir string) *pipeline.Result {
	t.Helper()
	opts, err := goldencase.Options(dir)
	if err != nil {
		t.Fatal(err)
	}
	set, err := goldencase.Load(dir)
	if err != nil {
		t.Fatalf("the input of %s does not load: %v", dir, err)
	}
	return pipeline.Run(set, opts)
}

// validateResources has Envoy validate res in a static bootstrap; with
// missingClusters (routes name a cluster on purpose: an invalid backend,
// answered 500) the route configurations are loaded as RDS loads them,
// without checking route clusters.
func validateResources(t *testing.T, envoy string, res *translator.Resources, missingClusters bool) ([]byte, error) {
	t.Helper()
	if missingClusters {
		for _, m := range res.Routes {
			m.(*routev3.RouteConfiguration).ValidateClusters = wrapperspb.Bool(false)
		}
	}
	b, err := staticBootstrap(res)
	if err != nil {
		t.Fatal(err)
	}
	return envoyValidate(t, envoy, b)
}

// namesMissingCluster reports whether a model has a route whose weighted
// clusters name a cluster the model does not have.
func namesMissingCluster(m *ir.Model) bool {
	clusters := map[string]bool{}
	for _, c := range m.Clusters {
		clusters[c.Name] = true
	}
	var hosts []*ir.VirtualHost
	for _, l := range m.Listeners {
		hosts = append(hosts, l.Insecure...)
		for _, s := range l.Secure {
			hosts = append(hosts, &s.VirtualHost)
		}
		if l.Fallback != nil {
			hosts = append(hosts, l.Fallback.VirtualHosts...)
		}
	}
	for _, h := range hosts {
		for _, r := range h.Routes {
			for _, c := range r.Clusters {
				if !clusters[c.Cluster] {
					return true
				}
			}
		}
	}
	return false
}

// envoyBinary finds Envoy, failing the test with the way to install it.
func envoyBinary(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	path, err := envoyPath(os.Getenv("PORTCULLIS_TOOLS"), wd)
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// envoyValidate runs Envoy's validate mode on a bootstrap; err is set when
// Envoy rejects it, and out holds what Envoy printed.
func envoyValidate(t *testing.T, envoy string, b *bootstrapv3.Bootstrap) (out []byte, err error) {
	t.Helper()
	j, err := protojson.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "bootstrap.json")
	if err := os.WriteFile(path, j, 0o600); err != nil {
		t.Fatal(err)
	}
	return exec.Command(envoy, "--mode", "validate", "--disable-hot-restart", "--log-level", "warn", "-c", path).CombinedOutput()
}
