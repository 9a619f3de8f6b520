package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/portcullis/portcullis/e2e/harness"
)

// TestHelmChartTracingEnv renders the values of docs/tracing-servers.md's
// Helm example: both servers' containers get the OTLP endpoint.
func TestHelmChartTracingEnv(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(harness.RepoRoot(t), "docs", "tracing-servers.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## In the Helm chart\n")
	m := regexp.MustCompile("(?s)\n```yaml\n(.*?)```").FindStringSubmatch(section)
	if !ok || m == nil {
		t.Fatal("docs/tracing-servers.md: no yaml block of values under \"In the Helm chart\"")
	}
	values := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(values, []byte(m[1]), 0o600); err != nil {
		t.Fatal(err)
	}
	objs := helmTemplate(t, "-f", values, "--set", "authserver.enabled=true", "--set", "extprocserver.enabled=true")
	for _, server := range []string{"authserver", "extprocserver"} {
		_, c := serverContainer(t, server, objs, server)
		env, _, _ := unstructured.NestedSlice(c, "env")
		found := false
		for _, e := range env {
			if e, _ := e.(map[string]any); e["name"] == "OTEL_EXPORTER_OTLP_ENDPOINT" && strings.HasPrefix(e["value"].(string), "http://") {
				found = true
			}
		}
		if !found {
			t.Errorf("%s container env %v lacks OTEL_EXPORTER_OTLP_ENDPOINT", server, env)
		}
	}
}
