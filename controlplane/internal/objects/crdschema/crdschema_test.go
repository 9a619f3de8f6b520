package crdschema

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestCRDsAreTheChartsCRDs: crds/ holds the chart's CRDs as they are
// (hack/gateway-api-crds.sh copies them), one for each kind of files.
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
	if len(entries) != len(files) {
		t.Errorf("%d CRDs, want one for each of the %d kinds of files", len(entries), len(files))
	}
	for kind := range files {
		crd, err := readCRD(files[kind])
		if err != nil {
			t.Fatal(err)
		}
		if crd.Spec.Names.Kind != kind || crd.Spec.Group != Group {
			t.Errorf("files[%s] is the CRD of %s.%s", kind, crd.Spec.Names.Kind, crd.Spec.Group)
		}
		for _, v := range crd.Spec.Versions {
			if v.Served && !Covers(schema.GroupVersionKind{Group: Group, Version: v.Name, Kind: kind}) {
				t.Errorf("%s %s is served but not covered", kind, v.Name)
			}
		}
	}
}

var httpRoute = schema.GroupVersionKind{Group: Group, Version: "v1", Kind: "HTTPRoute"}

func route(rules string) string {
	return `{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute", "metadata": {"name": "r", "namespace": "default"}, "spec": {"parentRefs": [{"name": "web"}], "rules": [` + rules + `]}}`
}

// TestCheck: what the API server refuses, by the schema or by a CEL rule,
// is refused, with the field's path and the CRD's own message; what it
// stores is not. Each case runs twice: the second time from the memo.
func TestCheck(t *testing.T) {
	start := time.Now()
	if !Covers(httpRoute) {
		t.Fatal("no HTTPRoute schema")
	}
	t.Logf("compiling HTTPRoute v1: %v", time.Since(start))
	const valid = `{"backendRefs": [{"name": "echo", "port": 80}]}`
	emptyHeader := `{"filters": [{"type": "RequestHeaderModifier", "requestHeaderModifier": {"set": [{"name": "x", "value": ""}]}}]}`
	for _, tc := range []struct {
		name string
		gvk  schema.GroupVersionKind
		doc  string
		want []string // in the errors; none: valid
	}{
		{"valid", httpRoute, route(valid), nil},
		{"no rules: the CRD's default rule", httpRoute, `{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute", "metadata": {"name": "r"}, "spec": {}}`, nil},
		{"a status is not validated", httpRoute, strings.TrimSuffix(route(valid), "}") + `, "status": {"parents": [{"conditions": "not a list"}]}}`, nil},
		{"an empty header value (schema: minLength)", httpRoute, route(emptyHeader),
			[]string{`spec.rules[0].filters[0].requestHeaderModifier.set[0].value: Invalid value: "": spec.rules[0].filters[0].requestHeaderModifier.set[0].value in body should be at least 1 chars long`}},
		{"the second rule's errors, at its path", httpRoute, route(valid + ", " + emptyHeader),
			[]string{"spec.rules[1].filters[0].requestHeaderModifier.set[0].value: Invalid value"}},
		{"replaceFullPath with ReplacePrefixMatch (CEL)", httpRoute, route(`{"filters": [{"type": "URLRewrite", "urlRewrite": {"path": {"type": "ReplacePrefixMatch", "replaceFullPath": "/x"}}}]}`),
			[]string{"spec.rules[0].filters[0].urlRewrite.path: Invalid value: type must be 'ReplaceFullPath' when replaceFullPath is set"}},
		{"a CEL rule on the list of rules (more than 128 matches)", httpRoute, route(strings.TrimSuffix(strings.Repeat(`{"matches": [`+strings.TrimSuffix(strings.Repeat(`{"path": {"value": "/a"}},`, 60), ",")+`]},`, 3), ",")),
			[]string{"spec.rules: Invalid value: While 16 rules and 64 matches per rule are allowed, the total number of matches across all rules in a route must be less than 128"}},
		{"more than 16 rules (schema: maxItems)", httpRoute, route(strings.Repeat(valid+", ", 16) + valid),
			[]string{"spec.rules: Too many: 17: must have at most 16 items"}},
		{"two parentRefs to one Gateway, no sectionName (CEL on parentRefs)", httpRoute, strings.Replace(route(valid), `[{"name": "web"}]`, `[{"name": "web"}, {"name": "web"}]`, 1),
			[]string{"spec.parentRefs: Invalid value: sectionName must be unique when parentRefs includes 2 or more references to the same parent"}},
		{"a v1beta1 route", schema.GroupVersionKind{Group: Group, Version: "v1beta1", Kind: "HTTPRoute"}, strings.Replace(route(emptyHeader), "/v1", "/v1beta1", 1),
			[]string{"spec.rules[0].filters[0].requestHeaderModifier.set[0].value"}},
		{"a Gateway's listener names (CEL)", schema.GroupVersionKind{Group: Group, Version: "v1", Kind: "Gateway"},
			`{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway", "metadata": {"name": "g"}, "spec": {"gatewayClassName": "c", "listeners": [{"name": "a", "port": 80, "protocol": "HTTP"}, {"name": "a", "port": 81, "protocol": "HTTP"}]}}`,
			[]string{"spec.listeners: Invalid value: Listener name must be unique within the Gateway"}},
		{"a Gateway without listeners (schema: required)", schema.GroupVersionKind{Group: Group, Version: "v1", Kind: "Gateway"},
			`{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway", "metadata": {"name": "g"}, "spec": {"gatewayClassName": "c"}}`,
			[]string{"spec.listeners: Required value"}},
		{"a spec that is not an object", httpRoute, `{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute", "metadata": {"name": "r"}, "spec": [1]}`,
			[]string{"spec in body must be of type object", notChecked}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, pass := range []string{"first", "remembered"} {
				errs, err := Check(tc.gvk, []byte(tc.doc))
				if err != nil {
					t.Fatal(err)
				}
				got := ""
				if agg := errs.ToAggregate(); agg != nil {
					got = agg.Error()
				}
				if len(tc.want) == 0 && got != "" {
					t.Errorf("%s: refused: %s", pass, got)
				}
				for _, w := range tc.want {
					if !strings.Contains(got, w) {
						t.Errorf("%s: errors %q, want %q", pass, got, w)
					}
				}
			}
		})
	}
}

// TestCostIsBounded: a hostile file cannot make the CEL rules run for
// long: 2,000 parentRefs (the schema allows 32) would cost the rule that
// compares them pairwise 4,000,000 comparisons; as in the API server, the
// schema's refusal (too many) stops the rules from running at all (what
// the schema allows, the CRD's cost estimates bound, and the API
// server's cost limits apply to each rule and to the object).
func TestCostIsBounded(t *testing.T) {
	refs := make([]string, 2000)
	for i := range refs {
		refs[i] = fmt.Sprintf(`{"name": "g%d"}`, i)
	}
	doc := strings.Replace(route(`{}`), `[{"name": "web"}]`, "["+strings.Join(refs, ",")+"]", 1)
	start := time.Now()
	errs, err := Check(httpRoute, []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	got := errs.ToAggregate().Error()
	if !strings.Contains(got, "Too many: 2000") || !strings.Contains(got, notChecked) {
		t.Errorf("errors %q, want the schema's maxItems, and the CEL rules not run", got)
	}
	if took > 2*time.Second {
		t.Errorf("took %v", took)
	}
	t.Logf("%v", took)
}

// TestMemo: a part is remembered by its text, never by less: the routes
// of the scale benchmark share 20 texts of rules among 100 routes, and a
// rule that differs by one character is validated again, with its own
// verdict, in either order.
func TestMemo(t *testing.T) {
	c, err := checkerFor(httpRoute)
	if err != nil {
		t.Fatal(err)
	}
	rules := c.parts[slices.IndexFunc(c.parts, func(p *part) bool { return p.name == "rules" })]
	texts := map[[32]byte]bool{}
	before := len(rules.memo)
	for _, doc := range benchRoutes(100) {
		if errs, err := Check(httpRoute, doc); err != nil || len(errs) > 0 {
			t.Fatal(err, errs)
		}
		_, _ = members(doc, func(k string, spec []byte) {
			if k == "spec" {
				_, _ = members(spec, func(k string, raw []byte) {
					if k == "rules" {
						texts[sha256.Sum256(raw)] = true
					}
				})
			}
		})
	}
	if len(texts) != 20 || len(rules.memo)-before > 20 {
		t.Errorf("%d texts of rules, %d more remembered; want 20, at most 20", len(texts), len(rules.memo)-before)
	}
	for k := range texts {
		if _, ok := rules.memo[k]; !ok {
			t.Errorf("a text of rules is not remembered")
		}
	}
	const set = `{"filters": [{"type": "RequestHeaderModifier", "requestHeaderModifier": {"set": [{"name": "x-memo", "value": "%s"}]}}]}`
	for _, value := range []string{"a", "", "a", ""} {
		errs, err := Check(httpRoute, []byte(route(fmt.Sprintf(set, value))))
		if err != nil {
			t.Fatal(err)
		}
		if invalid := len(errs) > 0; invalid != (value == "") {
			t.Errorf("value %q: errors %v", value, errs)
		}
	}
}

// TestCheckConcurrently: objects are decoded in parallel (objects.Decode),
// and checked so: the memo is shared (go test -race).
func TestCheckConcurrently(t *testing.T) {
	docs := benchRoutes(400)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < len(docs); i += 4 {
				if errs, err := Check(httpRoute, docs[i]); err != nil || len(errs) > 0 {
					t.Error(err, errs)
				}
			}
		})
	}
	wg.Wait()
}
