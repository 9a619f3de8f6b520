package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/e2e/harness"
)

// TestGatewayAPIStatusKubernetes: portcullis serve in kubernetes mode reads
// Gateway API objects from the API server and writes their statuses back
// (what the statuses say is the builder's, tested by its goldens).
func TestGatewayAPIStatusKubernetes(t *testing.T) {
	k := startKubeControlPlane(t)
	objs := []*unstructured.Unstructured{
		gatewayObject("GatewayClass", "", "portcullis", map[string]any{"controllerName": "portcullis.dev/gateway-controller"}),
		gatewayObject("Gateway", "default", "gw", map[string]any{"gatewayClassName": "portcullis",
			"listeners": []any{map[string]any{"name": "http", "port": int64(80), "protocol": "HTTP"}}}),
		gatewayObject("HTTPRoute", "default", "web", map[string]any{"parentRefs": []any{map[string]any{"name": "gw"}},
			"rules": []any{map[string]any{"backendRefs": []any{map[string]any{"name": "missing", "port": int64(80)}}}}}),
	}
	for _, o := range objs {
		k.apply(t, o)
	}
	harness.Eventually(t, statusTimeout, func() error {
		for _, o := range objs {
			got := gatewayObject(o.GetKind(), o.GetNamespace(), o.GetName(), nil)
			if err := k.api.Client.Get(context.Background(), client.ObjectKeyFromObject(o), got); err != nil {
				return err
			}
			if err := ourStatus(got); err != nil {
				return fmt.Errorf("%s %s: %w", o.GetKind(), o.GetName(), err)
			}
		}
		return nil
	})
	// A rebuild writes only what changed: a status that differed from
	// what the API server stored (after its defaulting) would be written
	// again at every rebuild. The marker's status proves the rebuild.
	time.Sleep(time.Second) // let the first writes' rebuilds, if any, settle
	metrics := "http://" + k.admin + "/metrics"
	writes := harness.MetricValue(t, metrics, "portcullis_status_writes_total")
	k.apply(t, &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "marker"}, Spec: contourv1.HTTPProxySpec{
		VirtualHost: &contourv1.VirtualHost{Fqdn: "marker.example.com"},
		Routes:      []contourv1.Route{{DirectResponsePolicy: &contourv1.HTTPDirectResponsePolicy{StatusCode: 200}}}}})
	k.eventuallyProxy(t, "default", "marker", want{status: metav1.ConditionTrue, reason: "Valid"})
	if d := harness.MetricValue(t, metrics, "portcullis_status_writes_total") - writes; d != 1 {
		t.Errorf("a rebuild wrote %v statuses, want 1 (the marker's)", d)
	}
}

// ourStatus checks that o has a status written by portcullis: an Accepted
// condition on a class or Gateway (with a listener status), a parent of our
// controller on a route.
func ourStatus(o *unstructured.Unstructured) error {
	if o.GetKind() == "HTTPRoute" {
		parents, _, _ := unstructured.NestedSlice(o.Object, "status", "parents")
		for _, p := range parents {
			if p.(map[string]any)["controllerName"] == "portcullis.dev/gateway-controller" {
				return nil
			}
		}
		return fmt.Errorf("no parent status of ours: %v", parents)
	}
	conditions, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	for _, c := range conditions {
		c := c.(map[string]any)
		if c["type"] == "Accepted" && c["reason"] != "Pending" {
			if o.GetKind() == "Gateway" {
				if listeners, _, _ := unstructured.NestedSlice(o.Object, "status", "listeners"); len(listeners) != 1 {
					return fmt.Errorf("listener statuses %v", listeners)
				}
			}
			return nil
		}
	}
	return fmt.Errorf("no Accepted condition of ours: %v", conditions)
}

func gatewayObject(kind, namespace, name string, spec map[string]any) *unstructured.Unstructured {
	o := &unstructured.Unstructured{Object: map[string]any{}}
	o.SetAPIVersion("gateway.networking.k8s.io/v1")
	o.SetKind(kind)
	o.SetNamespace(namespace)
	o.SetName(name)
	if spec != nil {
		o.Object["spec"] = spec
	}
	return o
}
