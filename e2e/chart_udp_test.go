package e2e

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestHelmChartEnvoyServiceExtraPorts: envoy.service.extraPorts adds
// ports to the Service in front of Envoy, a UDP listener's with protocol
// UDP (its targetPort the Envoy port), TCP by default, after HTTP and
// HTTPS.
func TestHelmChartEnvoyServiceExtraPorts(t *testing.T) {
	objs := helmTemplate(t, "--set-json", `envoy.service.extraPorts=[{"name":"dns","port":53,"targetPort":8053,"protocol":"UDP"},{"name":"db","port":5432}]`)
	for _, o := range objs {
		if o.GetKind() != "Service" || o.GetName() != "t-portcullis" {
			continue
		}
		var svc corev1.Service
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &svc); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range svc.Spec.Ports {
			got = append(got, p.Name+":"+string(p.Protocol)+":"+p.TargetPort.String())
		}
		want := []string{"http:TCP:http", "https:TCP:https", "dns:UDP:8053", "db:TCP:5432"}
		if len(got) != len(want) {
			t.Fatalf("ports %v, want %v", got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("ports %v, want %v", got, want)
				break
			}
		}
		return
	}
	t.Fatal("no Envoy Service rendered")
}
