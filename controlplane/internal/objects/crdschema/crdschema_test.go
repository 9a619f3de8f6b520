package crdschema

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// TestCRDsAreTheChartsCRDs: crds/ holds the chart's CRDs as they are
// (hack/gateway-api-crds.sh copies them).
func TestCRDsAreTheChartsCRDs(t *testing.T) {
	entries, err := crdFiles.ReadDir("crds")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		ours, _ := crdFiles.ReadFile("crds/" + e.Name())
		chart, err := os.ReadFile(filepath.Join("../../../../charts/portcullis/gateway-api-crds", e.Name()))
		if err != nil || string(chart) != string(ours) {
			t.Errorf("crds/%s is not the chart's (%v): run hack/gateway-api-crds.sh", e.Name(), err)
		}
	}
	if len(entries) < 6 {
		t.Errorf("%d CRDs, want the 6 kinds read", len(entries))
	}
}

var httpRoute = schema.GroupVersionKind{Group: "gateway.networking.k8s.io", Version: "v1", Kind: "HTTPRoute"}

// TestCheck: what the API server refuses, by the schema or by a CEL rule,
// is refused; what it stores is not.
func TestCheck(t *testing.T) {
	start := time.Now()
	if !Covers(httpRoute) {
		t.Fatal("no HTTPRoute schema")
	}
	t.Logf("compiling: %v", time.Since(start))
	for _, tc := range []struct {
		name, rule string
		want       string // in the errors; "" none
	}{
		{"valid", `{"backendRefs": [{"name": "echo", "port": 80}]}`, ""},
		{"an empty header value (schema: minLength)", `{"filters": [{"type": "RequestHeaderModifier", "requestHeaderModifier": {"set": [{"name": "x", "value": ""}]}}]}`, "value"},
		{"the second rule's errors, at its path (memoized items)", `{"backendRefs": [{"name": "echo", "port": 80}]}, {"filters": [{"type": "RequestHeaderModifier", "requestHeaderModifier": {"set": [{"name": "x", "value": ""}]}}]}`, "spec.rules[1].filters[0].requestHeaderModifier.set[0].value"},
		{"the same rule first, at its path", `{"filters": [{"type": "RequestHeaderModifier", "requestHeaderModifier": {"set": [{"name": "x", "value": ""}]}}]}, {"backendRefs": [{"name": "echo", "port": 80}]}`, "spec.rules[0].filters[0].requestHeaderModifier.set[0].value"},
		{"a rule on the spec (more than 16 rules: schema maxItems)", strings.Repeat(`{"backendRefs": [{"name": "echo", "port": 80}]}, `, 16) + `{}`, "spec.rules: Too many"},
		{"replaceFullPath with ReplacePrefixMatch (CEL)", `{"filters": [{"type": "URLRewrite", "urlRewrite": {"path": {"type": "ReplacePrefixMatch", "replaceFullPath": "/x"}}}]}`, "type must be 'ReplaceFullPath' when replaceFullPath is set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var obj map[string]any
			doc := `{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute", "metadata": {"name": "r", "namespace": "default"}, "spec": {"rules": [` + tc.rule + `]}}`
			if err := utiljson.Unmarshal([]byte(doc), &obj); err != nil {
				t.Fatal(err)
			}
			errs, err := Check(httpRoute, obj)
			if err != nil {
				t.Fatal(err)
			}
			got := errs.ToAggregate()
			switch {
			case tc.want == "" && got != nil:
				t.Errorf("refused: %v", got)
			case tc.want != "" && (got == nil || !strings.Contains(got.Error(), tc.want)):
				t.Errorf("errors %v, want %q", got, tc.want)
			}
		})
	}
}
