package harness

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// widgetCRD is a tiny CRD of our own, so this test does not depend on the
// generated apis/crds.
const widgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.e2e.portcullis.io
spec:
  group: e2e.portcullis.io
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`

// TestAPIServer starts the real kube-apiserver and etcd, installs a CRD,
// and finds out which ways of pointing a Service at a loopback upstream the
// API server accepts.
func TestAPIServer(t *testing.T) {
	t.Parallel()
	crdDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(crdDir, "widgets.yaml"), []byte(widgetCRD), 0o600); err != nil {
		t.Fatal(err)
	}
	api := StartAPIServer(t, crdDir)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "e2e"}}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "e2e", Name: "echo"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{
			Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP,
		}}},
	}
	if err := api.Apply(ctx, ns, svc); err != nil {
		t.Fatal(err)
	}

	// Loopback endpoints are refused by API validation (ValidateEndpointIP),
	// for EndpointSlices and Endpoints alike.
	loopSlice := endpointSlice("echo-loopback", "127.0.0.1", 8080)
	err := api.Apply(ctx, loopSlice)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("EndpointSlice with 127.0.0.1: err = %v, want Invalid (loopback)", err)
	} else {
		t.Logf("EndpointSlice with 127.0.0.1 is rejected: %v", err)
	}
	// (core/v1 Endpoints is deprecated; it is here only to record the rule.)
	//nolint:staticcheck // SA1019: the deprecated core/v1 Endpoints is what this checks the API server's validation of
	loopEndpoints := &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Namespace: "e2e", Name: "echo"},
		Subsets: []corev1.EndpointSubset{{
			Addresses: []corev1.EndpointAddress{{IP: "127.0.0.1"}},
			Ports:     []corev1.EndpointPort{{Name: "http", Port: 8080}},
		}},
	}
	if err := api.Apply(ctx, loopEndpoints); !apierrors.IsInvalid(err) {
		t.Errorf("Endpoints with 127.0.0.1: err = %v, want Invalid", err)
	}

	// A routable address is accepted and reads back as written.
	slice := endpointSlice("echo-1", "10.0.0.10", 8080)
	if err := api.Apply(ctx, slice); err != nil {
		t.Fatal(err)
	}
	var gotSlice discoveryv1.EndpointSlice
	if err := api.Client.Get(ctx, client.ObjectKeyFromObject(slice), &gotSlice); err != nil {
		t.Fatal(err)
	}
	if a := gotSlice.Endpoints[0].Addresses[0]; a != "10.0.0.10" || *gotSlice.Ports[0].Port != 8080 {
		t.Errorf("EndpointSlice read back as %s:%d", a, *gotSlice.Ports[0].Port)
	}

	// ExternalName Services may name loopback: the route to a local upstream
	// when the control plane resolves them (Contour: enableExternalNameService).
	for _, name := range []string{"localhost", "127.0.0.1"} {
		ext := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: "e2e", Name: "ext-" + strings.ReplaceAll(name, ".", "-")},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: name,
				Ports: []corev1.ServicePort{{Name: "http", Port: 8080}}},
		}
		if err := api.Apply(ctx, ext); err != nil {
			t.Errorf("ExternalName %s: %v", name, err)
		}
	}

	// Apply updates what exists.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "e2e", Name: "cm"}, Data: map[string]string{"v": "1"}}
	if err := api.Apply(ctx, cm); err != nil {
		t.Fatal(err)
	}
	cm2 := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "e2e", Name: "cm"}, Data: map[string]string{"v": "2"}}
	if err := api.Apply(ctx, cm2); err != nil {
		t.Fatal(err)
	}

	// The CRD from crdDir is installed and serves objects.
	widget := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "e2e.portcullis.io/v1", "kind": "Widget",
		"metadata": map[string]any{"namespace": "e2e", "name": "w"},
		"spec":     map[string]any{"size": int64(3)},
	}}
	if err := api.Apply(ctx, widget); err != nil {
		t.Fatal(err)
	}

	// The kubeconfig file works for a fresh client, as it will for
	// `portcullis serve --kubeconfig`.
	cfg, err := clientcmd.BuildConfigFromFlags("", api.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := client.New(cfg, client.Options{Scheme: Scheme})
	if err != nil {
		t.Fatal(err)
	}
	var gotCM corev1.ConfigMap
	if err := fresh.Get(ctx, client.ObjectKeyFromObject(cm), &gotCM); err != nil {
		t.Fatalf("fresh client from kubeconfig: %v", err)
	}
	if gotCM.Data["v"] != "2" {
		t.Errorf("ConfigMap after the second Apply: %v", gotCM.Data)
	}
	gotWidget := &unstructured.Unstructured{}
	gotWidget.SetAPIVersion("e2e.portcullis.io/v1")
	gotWidget.SetKind("Widget")
	if err := fresh.Get(ctx, client.ObjectKeyFromObject(widget), gotWidget); err != nil {
		t.Fatal(err)
	}
	if size, _, _ := unstructured.NestedInt64(gotWidget.Object, "spec", "size"); size != 3 {
		t.Errorf("widget read back as %v", gotWidget.Object)
	}

	if err := api.Delete(ctx, cm, cm); err != nil {
		t.Errorf("Delete (twice) = %v", err)
	}
}

func endpointSlice(name, ip string, port int32) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "e2e", Name: name,
			Labels: map[string]string{discoveryv1.LabelServiceName: "echo"},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{
			Addresses:  []string{ip},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
		}},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(port), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
}
