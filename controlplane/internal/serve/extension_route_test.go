package serve

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/controlplane/internal/builder"
	"github.com/portcullis/portcullis/controlplane/internal/config"
	"github.com/portcullis/portcullis/controlplane/internal/extension"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/pipeline"
	"github.com/portcullis/portcullis/controlplane/internal/status"
	"github.com/portcullis/portcullis/controlplane/internal/translator"
	"github.com/portcullis/portcullis/extension/api/v1alpha1"
	"github.com/portcullis/portcullis/extension/sdk"
	"github.com/portcullis/portcullis/extension/sdk/sdktest"
)

// gatewayYAML is the Service echo and the Gateway web (HTTP on port 80)
// of our class, which the tests' HTTPRoutes attach to.
const gatewayYAML = `
apiVersion: v1
kind: Service
metadata: {name: echo, namespace: default}
spec:
  ports: [{name: http, port: 80}]
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
`

var retryPolicyKind = schema.GroupVersionKind{Group: "example.vendor.io", Version: "v1", Kind: "RetryPolicy"}

// gatewayObjects are a Gateway and an HTTPRoute whose first rule
// references the RetryPolicy "retry" (with attempts) and whose second
// rule references nothing; withPolicy false leaves the RetryPolicy out.
func gatewayObjects(t *testing.T, attempts int, withPolicy bool) *objects.Set {
	t.Helper()
	in := gatewayYAML + `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: app, namespace: default, generation: 3}
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
`
	var s objects.Set
	if _, err := s.Decode(strings.NewReader(in), "test"); err != nil {
		t.Fatal(err)
	}
	if withPolicy {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(retryPolicyKind)
		u.SetNamespace("default")
		u.SetName("retry")
		u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "kubectl"}})
		if err := unstructured.SetNestedField(u.Object, int64(attempts), "spec", "attempts"); err != nil {
			t.Fatal(err)
		}
		s.Extensions = append(s.Extensions, u)
	}
	s.Sort()
	return &s
}

// routeRequests records the PostRouteModify requests an extension gets.
type routeRequests struct {
	mu   sync.Mutex
	reqs []*v1alpha1.PostRouteModifyRequest
	fail bool
}

func (r *routeRequests) all() []*v1alpha1.PostRouteModifyRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*v1alpha1.PostRouteModifyRequest(nil), r.reqs...)
}

// retryExtension sets the retry policy of the routes that reference a
// RetryPolicy from its spec.attempts (or fails while rec.fail is set).
func retryExtension(t *testing.T, rec *routeRequests) string {
	return sdktest.Listen(t, &sdk.Server{
		RouteModify: func(_ context.Context, req *v1alpha1.PostRouteModifyRequest) (*v1alpha1.PostRouteModifyResponse, error) {
			rec.mu.Lock()
			rec.reqs = append(rec.reqs, req)
			fail := rec.fail
			rec.mu.Unlock()
			if fail {
				return nil, grpcstatus.Error(codes.FailedPrecondition, "retries are off")
			}
			u, err := sdk.Unstructured(req.GetExtensionResources()[0])
			if err != nil {
				return nil, err
			}
			n, _, _ := unstructured.NestedInt64(u.Object, "spec", "attempts")
			rt := req.GetRoute()
			rt.GetRoute().RetryPolicy = &routev3.RetryPolicy{RetryOn: "5xx", NumRetries: wrapperspb.UInt32(uint32(n))}
			return &v1alpha1.PostRouteModifyResponse{Route: rt}, nil
		},
	})
}

// tagExtension adds the response header x-tag to every virtual host.
func tagExtension(t *testing.T) string {
	return sdktest.Listen(t, &sdk.Server{
		VirtualHostModify: func(_ context.Context, req *v1alpha1.PostVirtualHostModifyRequest) (*v1alpha1.PostVirtualHostModifyResponse, error) {
			vh := req.GetVirtualHost()
			vh.ResponseHeadersToAdd = append(vh.ResponseHeadersToAdd, &corev3.HeaderValueOption{Header: &corev3.HeaderValue{Key: "x-tag", Value: "tagged"}})
			return &v1alpha1.PostVirtualHostModifyResponse{VirtualHost: vh}, nil
		},
	})
}

// chainServer is a Server with the retry extension then the tag
// extension, RetryPolicy registered by the first.
func chainServer(t *testing.T, retry, tag string) *Server {
	t.Helper()
	c, err := config.Parse([]byte(fmt.Sprintf(`
extensions:
- name: retry
  address: %s
  hooks: [PostRouteModify]
  resources: [{group: example.vendor.io, version: v1, kind: RetryPolicy}]
  timeout: 5s
- name: tag
  address: %s
  hooks: [PostVirtualHostModify]
  failurePolicy: Open
  timeout: 5s
`, retry, tag)), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	regs, err := extension.FromConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	opts := pipeline.DefaultOptions()
	opts.Builder = builder.Options{}.WithConfig(c)
	s, err := newServer(Config{Pipeline: opts, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Extensions: regs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.ext.close)
	return s
}

// appVHost is the published virtual host of app.example.com.
func appVHost(t *testing.T, s *Server) *routev3.VirtualHost {
	t.Helper()
	_, res := published(s)
	if res == nil {
		t.Fatal("nothing published")
	}
	for _, m := range res.Routes {
		for _, vh := range m.(*routev3.RouteConfiguration).GetVirtualHosts() {
			for _, d := range vh.GetDomains() {
				if d == "app.example.com" {
					return vh
				}
			}
		}
	}
	t.Fatal("no virtual host for app.example.com")
	return nil
}

// retries are the NumRetries of each route of vh by path (-1: none).
func retries(vh *routev3.VirtualHost) map[string]int {
	out := map[string]int{}
	for _, r := range vh.GetRoutes() {
		p := r.GetMatch().GetPathSeparatedPrefix() + r.GetMatch().GetPrefix() + r.GetMatch().GetPath()
		out[p] = -1
		if rp := r.GetRoute().GetRetryPolicy(); rp != nil {
			out[p] = int(rp.GetNumRetries().GetValue())
		}
	}
	return out
}

var httpRouteApp = objects.Ref{Kind: objects.KindHTTPRoute, Namespace: "default", Name: "app"}

// A rule with an ExtensionRef of a registered kind: its routes (one per
// match) go through the owner's PostRouteModify with the object and the
// route's context, the next extension of the chain sees the result, an
// edit of the object reaches Envoy, and a failing hook is the HTTPRoute's
// ExtensionError condition until it recovers.
func TestExtensionRefRoutes(t *testing.T) {
	rec := &routeRequests{}
	s := chainServer(t, retryExtension(t, rec), tagExtension(t))
	ctx := t.Context()

	s.rebuild(ctx, gatewayObjects(t, 3, true))
	vh := appVHost(t, s)
	if got := retries(vh); got["/retried"] != 3 || got["/also"] != 3 || got["/plain"] != -1 {
		t.Errorf("retries by route = %v, want 3 on the rule's two matches, none on /plain", got)
	}
	if !hasHeaderKey(vh.GetResponseHeadersToAdd(), "x-tag") {
		t.Error("the second extension's change is missing")
	}
	reqs := rec.all()
	if len(reqs) != 2 {
		t.Fatalf("PostRouteModify called %d times, want 2 (one per match of the rule)", len(reqs))
	}
	names := map[string]bool{}
	for _, req := range reqs {
		c := req.GetContext()
		if c.GetRouteKind() != "HTTPRoute" || c.GetRouteNamespace() != "default" || c.GetRouteName() != "app" ||
			c.GetRuleName() != "retried" || c.GetRuleIndex() != 0 || strings.Join(c.GetHostnames(), ",") != "app.example.com" {
			t.Errorf("context = %v", c)
		}
		u, err := sdk.Unstructured(req.GetExtensionResources()[0])
		if err != nil || u.GetName() != "retry" || u.GetKind() != "RetryPolicy" || len(u.GetManagedFields()) != 0 {
			t.Errorf("resource = %v, %v; want the RetryPolicy without managedFields", u, err)
		}
		names[req.GetRoute().GetName()] = true
	}
	if !names["httproute/default/app/rule/0/match/0"] || !names["httproute/default/app/rule/0/match/1"] {
		t.Errorf("route names %v", names)
	}

	// Unchanged: the answers are reused, the extension not called.
	s.rebuild(ctx, gatewayObjects(t, 3, true))
	if n := len(rec.all()); n != 2 {
		t.Errorf("an unchanged route was sent again (%d calls)", n)
	}

	// The object changes: so does Envoy's configuration.
	s.rebuild(ctx, gatewayObjects(t, 5, true))
	if got := retries(appVHost(t, s)); got["/retried"] != 5 {
		t.Errorf("after the edit, retries = %v, want 5", got)
	}

	// The hook fails (Closed): the last configuration stays, the route
	// says why.
	rec.mu.Lock()
	rec.fail = true
	rec.mu.Unlock()
	s.rebuild(ctx, gatewayObjects(t, 7, true))
	if got := retries(appVHost(t, s)); got["/retried"] != 5 {
		t.Errorf("under Closed, a failed hook published retries = %v, want 5 kept", got)
	}
	st := routeStatus(t, s)
	c := findCondition(st, status.TypeExtensionError)
	if c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, `extension "retry": hook PostRouteModify failed`) ||
		!strings.Contains(c.Message, "FailedPrecondition") || !strings.Contains(c.Message, "retries are off") {
		t.Fatalf("ExtensionError condition = %+v", c)
	}

	// It recovers: published, condition gone.
	rec.mu.Lock()
	rec.fail = false
	rec.mu.Unlock()
	s.rebuild(ctx, gatewayObjects(t, 7, true))
	if got := retries(appVHost(t, s)); got["/retried"] != 7 {
		t.Errorf("after recovery, retries = %v, want 7", got)
	}
	if c := findCondition(routeStatus(t, s), status.TypeExtensionError); c != nil {
		t.Errorf("ExtensionError after recovery: %+v", c)
	}

	// The object is deleted: the rule answers 500 (a filter that cannot be
	// resolved is not skipped), the other rule is served.
	s.rebuild(ctx, gatewayObjects(t, 7, false))
	for _, r := range appVHost(t, s).GetRoutes() {
		p := r.GetMatch().GetPathSeparatedPrefix()
		if dr := r.GetDirectResponse(); (p == "/retried" || p == "/also") != (dr != nil && dr.GetStatus() == 500) {
			t.Errorf("route %s: direct response %v; want 500 only for the rule whose RetryPolicy is gone", p, dr)
		}
	}
	rr := findCondition(routeStatus(t, s), string(gwapiv1.RouteConditionResolvedRefs))
	if rr == nil || rr.Status != metav1.ConditionFalse || !strings.Contains(rr.Message, `ExtensionRef RetryPolicy.example.vendor.io "retry": not found`) {
		t.Errorf("ResolvedRefs = %+v", rr)
	}
}

// routeStatus is the HTTPRoute's status as last computed.
func routeStatus(t *testing.T, s *Server) gwapiv1.RouteStatus {
	t.Helper()
	o := s.published[httpRouteApp].findings
	if o == nil {
		t.Fatal("no status for the HTTPRoute")
	}
	return status.Route(o, gwapiv1.RouteStatus{}, metav1.Now())
}

// findCondition is the condition of type typ of the route's first parent.
func findCondition(st gwapiv1.RouteStatus, typ string) *metav1.Condition {
	if len(st.Parents) == 0 {
		return nil
	}
	for i, c := range st.Parents[0].Conditions {
		if c.Type == typ {
			return &st.Parents[0].Conditions[i]
		}
	}
	return nil
}

func hasHeaderKey(hs []*corev3.HeaderValueOption, k string) bool {
	for _, h := range hs {
		if h.GetHeader().GetKey() == k {
			return true
		}
	}
	return false
}

// vendorObjects: an HTTPRoute whose first rule sends to a Bucket (an
// extension backend) and whose second to a Service; Quota policies on
// the route, on the Gateway, and on a route that does not exist.
func vendorObjects(t *testing.T, bucketPort int64) *objects.Set {
	t.Helper()
	in := gatewayYAML + `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: app, namespace: default, generation: 1}
spec:
  parentRefs: [{name: web}]
  hostnames: [app.example.com]
  rules:
  - name: assets
    matches: [{path: {value: /assets}}]
    backendRefs: [{group: example.vendor.io, kind: Bucket, name: assets}]
  - name: open
    backendRefs: [{name: echo, port: 80}]
`
	var s objects.Set
	if _, err := s.Decode(strings.NewReader(in), "test"); err != nil {
		t.Fatal(err)
	}
	obj := func(kind, name string, spec map[string]any) {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
		u.SetGroupVersionKind(schema.GroupVersionKind{Group: "example.vendor.io", Version: "v1", Kind: kind})
		u.SetNamespace("default")
		u.SetName(name)
		u.SetGeneration(1)
		s.Extensions = append(s.Extensions, u)
	}
	target := func(kind, name string) map[string]any {
		return map[string]any{"targetRefs": []any{map[string]any{"group": "gateway.networking.k8s.io", "kind": kind, "name": name}}}
	}
	obj("Bucket", "assets", map[string]any{"port": bucketPort})
	obj("Quota", "on-route", target("HTTPRoute", "app"))
	obj("Quota", "on-gateway", target("Gateway", "web"))
	obj("Quota", "on-nothing", target("HTTPRoute", "missing"))
	s.Sort()
	return &s
}

// vendorExtension: PostRouteModify tags each route with the names of the
// Quotas it receives; PostClusterModify gives a Bucket's cluster an
// endpoint on 127.0.0.1 at the Bucket's spec.port.
func vendorExtension(t *testing.T) string {
	return sdktest.Listen(t, &sdk.Server{
		RouteModify: func(_ context.Context, req *v1alpha1.PostRouteModifyRequest) (*v1alpha1.PostRouteModifyResponse, error) {
			rt := req.GetRoute()
			for _, r := range req.GetExtensionResources() {
				u, err := sdk.Unstructured(r)
				if err != nil {
					return nil, err
				}
				key := "x-quota"
				if u.GetKind() == "Bucket" {
					key = "x-backend" // a backendRef's object, as Envoy Gateway sends it
				}
				rt.ResponseHeadersToAdd = append(rt.ResponseHeadersToAdd, &corev3.HeaderValueOption{Header: &corev3.HeaderValue{Key: key, Value: u.GetName()}})
			}
			return &v1alpha1.PostRouteModifyResponse{Route: rt}, nil
		},
		ClusterModify: func(_ context.Context, req *v1alpha1.PostClusterModifyRequest) (*v1alpha1.PostClusterModifyResponse, error) {
			u, err := sdk.Unstructured(req.GetBackend())
			if err != nil {
				return nil, err
			}
			port, _, _ := unstructured.NestedInt64(u.Object, "spec", "port")
			c := req.GetCluster()
			c.LoadAssignment = &endpointv3.ClusterLoadAssignment{ClusterName: c.GetName(), Endpoints: []*endpointv3.LocalityLbEndpoints{{
				LbEndpoints: []*endpointv3.LbEndpoint{{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
					Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
						Address: "127.0.0.1", PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: uint32(port)}}}}}}}},
			}}}
			return &v1alpha1.PostClusterModifyResponse{Cluster: c}, nil
		},
	})
}

// Extension policies attach with targetRefs (the most specific of a kind
// wins on a route, as for ExtAuthPolicies) and reach the owner's
// PostRouteModify; they get status.ancestors. A backendRef to an
// extension's backend kind is a cluster without endpoints that the
// owner's PostClusterModify completes.
func TestExtensionPoliciesAndBackends(t *testing.T) {
	c, err := config.Parse([]byte(fmt.Sprintf(`
extensions:
- name: vendor
  address: %s
  hooks: [PostRouteModify, PostClusterModify]
  backendResources: [{group: example.vendor.io, version: v1, kind: Bucket}]
  policyResources: [{group: example.vendor.io, version: v1, kind: Quota}]
  timeout: 5s
  allowLocalEndpoints: true # the Buckets' endpoints are on loopback
`, vendorExtension(t))), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	regs, err := extension.FromConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	opts := pipeline.DefaultOptions()
	opts.Builder = builder.Options{}.WithConfig(c)
	s, err := newServer(Config{Pipeline: opts, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Extensions: regs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.ext.close)

	s.rebuild(t.Context(), vendorObjects(t, 9001))
	for _, r := range appVHost(t, s).GetRoutes() {
		var quotas, backends []string
		for _, h := range r.GetResponseHeadersToAdd() {
			switch h.GetHeader().GetKey() {
			case "x-quota":
				quotas = append(quotas, h.GetHeader().GetValue())
			case "x-backend":
				backends = append(backends, h.GetHeader().GetValue())
			}
		}
		if strings.Join(quotas, ",") != "on-route" {
			t.Errorf("route %v got Quotas %v, want on-route (more specific than on-gateway)", r.GetMatch(), quotas)
		}
		wantBackends := ""
		if strings.Contains(r.GetMatch().String(), "/assets") {
			wantBackends = "assets"
		}
		if got := strings.Join(backends, ","); got != wantBackends {
			t.Errorf("route %v got the backends %q, want %q (the Bucket it sends to)", r.GetMatch(), got, wantBackends)
		}
	}
	_, res := published(s)
	const bucket = "extension-backend/bucket/example.vendor.io/default/assets"
	var found bool
	for _, m := range res.Clusters {
		if translator.ResourceName(m) != bucket {
			continue
		}
		found = true
		cl := m.(*clusterv3.Cluster)
		ep := cl.GetLoadAssignment().GetEndpoints()[0].GetLbEndpoints()[0].GetEndpoint().GetAddress().GetSocketAddress()
		if cl.GetType() != clusterv3.Cluster_STATIC || ep.GetPortValue() != 9001 {
			t.Errorf("bucket cluster = %v, want STATIC with the extension's endpoint", cl)
		}
	}
	for _, m := range res.Endpoints {
		if translator.ResourceName(m) == bucket {
			t.Error("an extension backend's cluster has an EDS resource: its endpoints are the extension's")
		}
	}
	if !found {
		t.Fatalf("no cluster %s", bucket)
	}

	accepted := map[string]string{}
	for _, u := range s.statuses {
		if u.ExtensionPolicy == nil {
			continue
		}
		if u.ExtensionGVK.Kind != "Quota" || u.APIVersion() != "example.vendor.io/v1" {
			t.Errorf("policy status of %v: GVK %v", u.Ref, u.ExtensionGVK)
		}
		for _, a := range u.ExtensionPolicy.Ancestors {
			for _, c := range a.Conditions {
				if c.Type == string(gwapiv1.PolicyConditionAccepted) {
					accepted[u.Ref.Name] = string(c.Status) + "/" + c.Reason
				}
			}
		}
	}
	want := map[string]string{"on-route": "True/Accepted", "on-gateway": "True/Accepted", "on-nothing": "False/TargetNotFound"}
	if fmt.Sprint(accepted) != fmt.Sprint(want) {
		t.Errorf("Quota ancestors' Accepted = %v, want %v", accepted, want)
	}
}
