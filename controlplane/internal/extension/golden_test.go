package extension

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/portcullis/portcullis/controlplane/internal/config"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/pipeline"
	"github.com/portcullis/portcullis/controlplane/internal/textdiff"
	"github.com/portcullis/portcullis/extension/api/v1alpha1"
	"github.com/portcullis/portcullis/extension/sdk"
	"github.com/portcullis/portcullis/extension/sdk/sdktest"
)

var update = flag.Bool("update", false, "rewrite the golden requests of testdata/hooks")

// goldenObjects are an HTTPProxy with two routes, and a Gateway with an
// HTTPRoute whose first rule references the RetryPolicy "retry" (a kind
// the test's extension registers), whose second rule references nothing
// and whose third sends to the Bucket "assets" (an extension backend);
// the Quota "limits" (an extension policy) targets the HTTPRoute's first
// rule, the Quota "site" the Gateway (its other rules, and its listener).
const goldenObjects = `
apiVersion: v1
kind: Service
metadata: {name: echo, namespace: default}
spec:
  ports: [{name: http, port: 80}]
---
apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {name: proxy, namespace: default}
spec:
  virtualhost: {fqdn: proxy.example.com}
  routes:
  - conditions: [{prefix: /api}]
    services: [{name: echo, port: 80}]
  - services: [{name: echo, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: portcullis}
spec: {controllerName: portcullis.dev/gateway-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: web, namespace: default, generation: 1}
spec:
  gatewayClassName: portcullis
  listeners: [{name: http, port: 80, protocol: HTTP}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: app, namespace: default, generation: 1}
spec:
  parentRefs: [{name: web}]
  hostnames: [app.example.com]
  rules:
  - name: retried
    matches: [{path: {value: /retried}}, {path: {value: /also}}]
    filters:
    - type: ExtensionRef
      extensionRef: {group: example.vendor.io, kind: RetryPolicy, name: retry}
    backendRefs: [{name: echo, port: 80}]
  - matches: [{path: {value: /plain}}]
    backendRefs: [{name: echo, port: 80}]
  - matches: [{path: {value: /assets}}]
    backendRefs: [{group: example.vendor.io, kind: Bucket, name: assets}]
`

// goldenHooks are the hooks, in the order Runner.Apply calls them.
var goldenHooks = Hooks

// TestHookRequestsGolden records every request of every hook an
// extension receives for a small translation made by the real pipeline
// (builder options from a configuration that registers the RetryPolicy
// kind) and compares them with testdata/hooks/<hook>.golden: a change of
// what extensions receive, the wire contract, cannot go unnoticed. Run
// `go test ./internal/extension -run TestHookRequestsGolden -update` to
// accept a change, then review the diff.
func TestHookRequestsGolden(t *testing.T) {
	var mu sync.Mutex
	got := map[Hook][]proto.Message{}
	record := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		h := Hook(info.FullMethod[strings.LastIndex(info.FullMethod, "/")+1:])
		mu.Lock()
		got[h] = append(got[h], proto.Clone(req.(proto.Message)))
		mu.Unlock()
		return handler(ctx, req)
	}
	addr := sdktest.Listen(t, &sdk.Server{}, grpc.ChainUnaryInterceptor(record))

	hooks := make([]string, len(goldenHooks))
	for i, h := range goldenHooks {
		hooks[i] = string(h)
	}
	cfg, err := config.Parse(fmt.Appendf(nil, `
extensions:
- name: golden
  address: %s
  hooks: [%s]
  resources: [{group: example.vendor.io, version: v1, kind: RetryPolicy}]
  backendResources: [{group: example.vendor.io, version: v1, kind: Bucket}]
  policyResources: [{group: example.vendor.io, version: v1, kind: Quota}]
  timeout: 10s
`, addr, strings.Join(hooks, ", ")), "golden.yaml")
	if err != nil {
		t.Fatal(err)
	}
	regs, err := FromConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	chain, closeConns, err := Connect(regs)
	if err != nil {
		t.Fatal(err)
	}
	defer closeConns()

	set := goldenSet(t)
	res := pipeline.Run(set, withConfig(cfg))
	refs := RefsOf(res.Build.Model)
	if len(refs.Routes) == 0 || len(refs.Clusters) == 0 {
		t.Fatalf("refs %+v: the HTTPRoute's ExtensionRef or its Bucket backend was not resolved", refs)
	}
	if _, failures := chain.Apply(t.Context(), res.Resources, refs); len(failures) > 0 {
		t.Fatalf("failures: %v", failures)
	}

	for _, h := range goldenHooks {
		t.Run(string(h), func(t *testing.T) {
			if len(got[h]) == 0 {
				t.Fatalf("%s was not called", h)
			}
			checkGolden(t, filepath.Join("testdata", "hooks", string(h)+".golden"), renderRequests(t, h, got[h]))
		})
	}
}

// renderRequests renders a hook's requests as indented protojson, sorted
// by the resource they concern, then by their text; each after a comment
// line naming it, and the extension resources of a PostRouteModify
// request (bytes, so base64 in protojson) decoded in comment lines too.
func renderRequests(t *testing.T, h Hook, reqs []proto.Message) []byte {
	t.Helper()
	type item struct{ name, text string }
	items := make([]item, len(reqs))
	for i, req := range reqs {
		b, err := protojson.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		// protojson's whitespace is deliberately unstable: indent it
		// ourselves.
		var ind bytes.Buffer
		if err := json.Indent(&ind, b, "", "  "); err != nil {
			t.Fatal(err)
		}
		items[i] = item{name: requestName(req), text: ind.String()}
		if r, ok := req.(*v1alpha1.PostRouteModifyRequest); ok {
			for j, x := range r.GetExtensionResources() {
				items[i].name += fmt.Sprintf("\n# extension_resources[%d].unstructured_json: %s", j, bytes.TrimSpace(x.GetUnstructuredJson()))
			}
		}
	}
	sort.Slice(items, func(i, j int) bool {
		if items[i].name != items[j].name {
			return items[i].name < items[j].name
		}
		return items[i].text < items[j].text
	})
	var out bytes.Buffer
	fmt.Fprintf(&out, "# The %d %s request(s) of TestHookRequestsGolden (golden_test.go), sorted by resource.\n", len(items), h)
	fmt.Fprintf(&out, "# Rewrite with: go test ./internal/extension -run TestHookRequestsGolden -update\n")
	for _, it := range items {
		fmt.Fprintf(&out, "\n# %s\n%s\n", it.name, it.text)
	}
	return out.Bytes()
}

// requestName names what a request is about.
func requestName(req proto.Message) string {
	switch r := req.(type) {
	case *v1alpha1.PostRouteModifyRequest:
		return fmt.Sprintf("route %q of virtual host %s", r.GetRoute().GetName(), strings.Join(r.GetContext().GetHostnames(), ","))
	case *v1alpha1.PostVirtualHostModifyRequest:
		return fmt.Sprintf("virtual host %q (domains %s)", r.GetVirtualHost().GetName(), strings.Join(r.GetVirtualHost().GetDomains(), ","))
	case *v1alpha1.PostHTTPListenerModifyRequest:
		return fmt.Sprintf("listener %q", r.GetListener().GetName())
	case *v1alpha1.PostEndpointsModifyRequest:
		return fmt.Sprintf("the endpoints of cluster %q", r.GetLoadAssignment().GetClusterName())
	}
	return "the configuration"
}

// checkGolden compares got with the golden file, or rewrites it with
// -update.
func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/extension -run TestHookRequestsGolden -update to create it)", err)
	}
	if d := textdiff.Unified(path, path+" (got)", string(want), string(got)); d != "" {
		t.Errorf("what extensions receive changed: %s differs; if the change is meant, run `go test ./internal/extension -run TestHookRequestsGolden -update`, review the diff and say so in the CHANGELOG.\n%s", path, d)
	}
}

// withConfig is the default pipeline with the configuration file cfg.
// goldenSet is goldenObjects with the extension objects they name.
func goldenSet(t *testing.T) *objects.Set {
	t.Helper()
	var set objects.Set
	if _, err := set.Decode(strings.NewReader(goldenObjects), "golden"); err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(retryPolicy)
	u.SetNamespace("default")
	u.SetName("retry")
	if err := unstructured.SetNestedField(u.Object, int64(3), "spec", "attempts"); err != nil {
		t.Fatal(err)
	}
	set.Extensions = append(set.Extensions, u)
	for _, x := range []struct {
		kind, name string
		spec       map[string]any
	}{
		{"Bucket", "assets", map[string]any{"region": "eu"}},
		{"Quota", "limits", map[string]any{"requestsPerSecond": int64(10), "targetRefs": []any{
			map[string]any{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": "app", "sectionName": "retried"}}}},
		{"Quota", "site", map[string]any{"requestsPerSecond": int64(100), "targetRefs": []any{
			map[string]any{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "web"}}}},
	} {
		o := &unstructured.Unstructured{Object: map[string]any{"spec": x.spec}}
		o.SetGroupVersionKind(schema.GroupVersionKind{Group: "example.vendor.io", Version: "v1", Kind: x.kind})
		o.SetNamespace("default")
		o.SetName(x.name)
		set.Extensions = append(set.Extensions, o)
	}
	set.Sort()
	return &set
}

func withConfig(cfg *config.Config) pipeline.Options {
	o := pipeline.DefaultOptions()
	o.Builder = o.Builder.WithConfig(cfg)
	return o
}
