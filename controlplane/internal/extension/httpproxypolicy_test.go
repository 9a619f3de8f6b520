package extension

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/portcullis/portcullis/controlplane/internal/config"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/pipeline"
	"github.com/portcullis/portcullis/extension/api/v1alpha1"
	"github.com/portcullis/portcullis/extension/sdk"
	"github.com/portcullis/portcullis/extension/sdk/sdktest"
)

// proxyPolicyObjects are a root HTTPProxy with two routes that includes
// a child with one, without any Gateway API object.
const proxyPolicyObjects = `
apiVersion: v1
kind: Service
metadata: {name: echo, namespace: default}
spec:
  ports: [{name: http, port: 80}]
---
apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {name: root, namespace: default}
spec:
  virtualhost: {fqdn: proxy.example.com}
  routes:
  - conditions: [{prefix: /api}]
    services: [{name: echo, port: 80}]
  - services: [{name: echo, port: 80}]
  includes:
  - name: child
    conditions: [{prefix: /child}]
---
apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {name: child, namespace: default}
spec:
  routes:
  - services: [{name: echo, port: 80}]
`

// TestPostRouteModifyHTTPProxyPolicy: a policy of an extension's kind
// targeting an HTTPProxy (here the child) reaches its owner's
// PostRouteModify with every route written in that HTTPProxy, wherever
// included: route_kind HTTPProxy, its namespace and name, the route's
// index as rule_index, the policy in extension_resources; the routes of
// the root (no policy) are not sent, and the answer is what Envoy gets.
func TestPostRouteModifyHTTPProxyPolicy(t *testing.T) {
	var mu sync.Mutex
	var reqs []*v1alpha1.PostRouteModifyRequest
	addr := sdktest.Listen(t, &sdk.Server{RouteModify: func(_ context.Context, req *v1alpha1.PostRouteModifyRequest) (*v1alpha1.PostRouteModifyResponse, error) {
		mu.Lock()
		reqs = append(reqs, proto.Clone(req).(*v1alpha1.PostRouteModifyRequest))
		mu.Unlock()
		r := proto.Clone(req.GetRoute()).(*routev3.Route)
		r.RequestHeadersToAdd = append(r.RequestHeadersToAdd, &corev3.HeaderValueOption{Header: &corev3.HeaderValue{Key: "x-quota", Value: "10"}})
		return &v1alpha1.PostRouteModifyResponse{Route: r}, nil
	}})
	cfg, err := config.Parse(fmt.Appendf(nil, `
extensions:
- name: quota
  address: %s
  hooks: [PostRouteModify]
  policyResources: [{group: example.vendor.io, version: v1, kind: Quota}]
  timeout: 10s
`, addr), "quota.yaml")
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

	var set objects.Set
	if _, err := set.Decode(strings.NewReader(proxyPolicyObjects), "objects"); err != nil {
		t.Fatal(err)
	}
	quota := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"requestsPerSecond": int64(10), "targetRefs": []any{
		map[string]any{"group": "projectcontour.io", "kind": "HTTPProxy", "name": "child"}}}}}
	quota.SetGroupVersionKind(schema.GroupVersionKind{Group: "example.vendor.io", Version: "v1", Kind: "Quota"})
	quota.SetNamespace("default")
	quota.SetName("limits")
	set.Extensions = append(set.Extensions, quota)
	set.Sort()

	res := pipeline.Run(&set, withConfig(cfg))
	out, failures := chain.Apply(t.Context(), res.Resources, RefsOf(res.Build.Model))
	if len(failures) > 0 {
		t.Fatalf("failures: %v", failures)
	}

	if len(reqs) != 1 {
		t.Fatalf("%d PostRouteModify calls, want 1 (the child's route)", len(reqs))
	}
	req := reqs[0]
	c := req.GetContext()
	if req.GetRoute().GetName() != "httpproxy/default/child/route/0" || c.GetRouteKind() != "HTTPProxy" || c.GetRouteNamespace() != "default" ||
		c.GetRouteName() != "child" || c.GetRuleIndex() != 0 || !slices.Equal(c.GetHostnames(), []string{"proxy.example.com"}) {
		t.Errorf("request for route %q, context %v; want the child's route 0 of proxy.example.com", req.GetRoute().GetName(), c)
	}
	if rs := req.GetExtensionResources(); len(rs) != 1 || !rs[0].GetPolicy() || !strings.Contains(string(rs[0].GetUnstructuredJson()), `"name":"limits"`) {
		t.Errorf("extension resources %v, want the Quota limits as a policy", rs)
	}

	headers := map[string]bool{}
	for _, m := range out.Routes {
		for _, vh := range m.(*routev3.RouteConfiguration).GetVirtualHosts() {
			for _, r := range vh.GetRoutes() {
				headers[r.GetName()] = len(r.GetRequestHeadersToAdd()) > 0
			}
		}
	}
	want := map[string]bool{"httpproxy/default/child/route/0": true, "httpproxy/default/root/route/0": false, "httpproxy/default/root/route/1": false}
	for name, modified := range want {
		if got, ok := headers[name]; !ok || got != modified {
			t.Errorf("route %q: present %v, modified %v; want modified %v", name, ok, got, modified)
		}
	}
}
