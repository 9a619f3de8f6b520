package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/portcullis/portcullis/e2e/harness"
)

// The chart's tracing and accessLog values become the configuration
// file's sections, which the real control plane reads and translates into
// every HCM's tracer and access log; the servers get the collector's OTLP
// endpoint and Envoy its pod's namespace (includePodDetail).
func TestHelmChartTracing(t *testing.T) {
	objs := helmTemplate(t, "--set", "tracing.extensionService=observability/otel", "--set", "tracing.includePodDetail=true",
		"--set", "tracing.otlpEndpoint=http://otel.observability:4317", "--set", "accessLog=json",
		"--set", "authserver.enabled=true", "--set", "extprocserver.enabled=true")
	var config string
	var otlp []string
	envoyNamespace := false
	for _, o := range objs {
		if o.GetKind() == "ConfigMap" && o.GetName() == "t-portcullis" {
			config, _, _ = unstructured.NestedString(o.Object, "data", "config.yaml")
		}
		if o.GetKind() != "Deployment" {
			continue
		}
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		for _, c := range containers {
			c := c.(map[string]any)
			env, _ := c["env"].([]any)
			for _, e := range env {
				e := e.(map[string]any)
				switch {
				case e["name"] == "OTEL_EXPORTER_OTLP_ENDPOINT" && e["value"] == "http://otel.observability:4317":
					otlp = append(otlp, o.GetName())
				case c["name"] == "envoy" && e["name"] == "POD_NAMESPACE":
					envoyNamespace = true
				}
			}
		}
	}
	slices.Sort(otlp)
	if !slices.Equal(otlp, []string{"t-portcullis-authserver", "t-portcullis-extprocserver"}) {
		t.Errorf("OTEL_EXPORTER_OTLP_ENDPOINT on %v, want the authorization and processing servers", otlp)
	}
	if !envoyNamespace {
		t.Error("Envoy's container has no POD_NAMESPACE (includePodDetail's podNamespaceName)")
	}
	if config == "" {
		t.Fatal("no configuration file rendered")
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(file, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "in.yaml")
	if err := os.WriteFile(in, []byte(`apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {name: app, namespace: default}
spec:
  virtualhost: {fqdn: app.example.com}
  routes:
  - directResponsePolicy: {statusCode: 200, body: ok}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	portcullis := harness.BuildBinary(t, "github.com/portcullis/portcullis/controlplane/cmd/portcullis")
	out, err := exec.Command(portcullis, "translate", "--config", file, "-f", in).CombinedOutput()
	if err != nil {
		t.Fatalf("portcullis translate with the chart's configuration:\n%s\n%v\n%s", config, err, out)
	}
	for _, want := range []string{"envoy.tracers.opentelemetry", "extension/observability/otel", "envoy.access_loggers.stdout", "jsonFormat", "POD_NAMESPACE"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the translation of the chart's configuration has no %s:\n%s", want, config)
		}
	}
	for _, tc := range []struct{ set, wantErr string }{
		{"tracing.otlpEndpoint=http://x:4317", "tracing.otlpEndpoint needs tracing.extensionService"},
		{"accessLog=envoy", `accessLog must be text, json or empty, not "envoy"`},
	} {
		if _, stderr, err := runHelmTemplate(t, "--set", tc.set); err == nil || !strings.Contains(stderr, tc.wantErr) {
			t.Errorf("%s: %v, want the error %q\n%s", tc.set, err, tc.wantErr, stderr)
		}
	}
	if _, stderr, err := runHelmTemplate(t, "--set", "tracing.extensionService=a/b", "--set", "controlPlane.config.tracing.extensionService=c/d"); err == nil ||
		!strings.Contains(stderr, "both configure tracing") {
		t.Errorf("tracing set twice: %v\n%s", err, stderr)
	}
}

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
