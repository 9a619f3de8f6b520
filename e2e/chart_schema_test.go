package e2e

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/portcullis/portcullis/e2e/harness"
)

var updateSchema = flag.Bool("update-schema", false, "rewrite charts/portcullis/values.schema.json from values.yaml")

// valuesSchema is the JSON schema of a chart's values, derived from its
// defaults: a key with a non-empty map is an object of exactly those keys
// (a typo such as envoy.replica is an error, not silently ignored); an
// empty map is free-form (annotations, nodeSelector, the control plane's
// configuration, which the control plane checks itself); a list is an
// array; null takes anything; scalars keep their type.
func valuesSchema(v any) map[string]any {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 {
			return map[string]any{"type": "object"}
		}
		props := map[string]any{}
		for k, e := range x {
			props[k] = valuesSchema(e)
		}
		return map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	case []any:
		return map[string]any{"type": "array"}
	case string:
		return map[string]any{"type": "string"}
	case bool:
		return map[string]any{"type": "boolean"}
	case float64:
		if x == float64(int64(x)) {
			return map[string]any{"type": "integer"}
		}
		return map[string]any{"type": "number"}
	}
	return map[string]any{}
}

// TestHelmChartValuesSchema: values.schema.json is the schema of
// values.yaml's defaults (go test -run TestHelmChartValuesSchema
// -update-schema . rewrites it), and Helm refuses a misspelt key or a
// value of the wrong type with it, naming the key.
func TestHelmChartValuesSchema(t *testing.T) {
	chart := filepath.Join(harness.RepoRoot(t), "charts", "portcullis")
	raw, err := os.ReadFile(filepath.Join(chart, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values any
	if err := yaml.Unmarshal(raw, &values); err != nil {
		t.Fatal(err)
	}
	schema := valuesSchema(values)
	schema["$schema"] = "https://json-schema.org/draft-07/schema#"
	schema["title"] = "Values of the portcullis chart (generated from values.yaml by e2e's TestHelmChartValuesSchema -update-schema)"
	want, err := json.MarshalIndent(schema, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, '\n')
	path := filepath.Join(chart, "values.schema.json")
	if *updateSchema {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("%s is stale (%v): run `cd e2e && go test -run TestHelmChartValuesSchema -update-schema .`", path, err)
	}

	helm := harness.Tool(t, "helm")
	for _, tc := range []struct{ set, wantErr string }{
		{"envoy.replica=3", "replica"},
		{"controlPlane.replicas=two", "replicas"},
		{"topologyy=colocated", "topologyy"},
	} {
		out, err := exec.Command(helm, "template", "t", chart, "--set", tc.set).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "schema") || !strings.Contains(string(out), tc.wantErr) {
			t.Errorf("--set %s: %v, want the schema to refuse it naming %q\n%.600s", tc.set, err, tc.wantErr, out)
		}
	}
	// Free-form maps and null defaults take what users put there.
	for _, set := range []string{"envoy.podAnnotations.a=b", "controlPlane.leaderElection.enabled=true", "controlPlane.config.gateway.servicePerGateway=true"} {
		if out, err := exec.Command(helm, "template", "t", chart, "--set", set).CombinedOutput(); err != nil {
			t.Errorf("--set %s: %v\n%.600s", set, err, out)
		}
	}
}
