package statuswriter

import (
	"context"
	"log/slog"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/testapiserver"
)

// The Gateways' Services writer creates the Services a build wants,
// updates one whose ports changed (keeping what the API server filled
// in), deletes the labelled ones no longer wanted, and leaves other
// Services alone.
func TestGatewayServices(t *testing.T) {
	api := testapiserver.Start(t)
	ctx := context.Background()
	c := api.Client
	svc := func(name string, port, target int32) *corev1.Service {
		return &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name,
				Labels:      map[string]string{objects.GatewayServiceLabel: "web." + name},
				Annotations: map[string]string{objects.GatewayServiceAnnotation: "web/" + name}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Selector: map[string]string{"app": "envoy"},
				Ports: []corev1.ServicePort{{Name: "port", Protocol: corev1.ProtocolTCP, Port: port, TargetPort: intstr.FromInt32(target)}}},
		}
	}
	// Not the writer's: no label.
	other := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "other"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
	if err := c.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	w := &Services{Client: c, Namespace: "default", Log: slog.New(slog.DiscardHandler)}

	if err := w.Apply(ctx, []*corev1.Service{svc("a", 80, 20000), svc("b", 80, 20001)}); err != nil {
		t.Fatal(err)
	}
	var a corev1.Service
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "a"}, &a); err != nil {
		t.Fatal(err)
	}
	ip := a.Spec.ClusterIP
	if ip == "" || a.Spec.Ports[0].TargetPort.IntValue() != 20000 {
		t.Fatalf("created a: %+v", a.Spec)
	}

	if err := w.Apply(ctx, []*corev1.Service{svc("a", 80, 20005)}); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "a"}, &a); err != nil {
		t.Fatal(err)
	}
	if a.Spec.ClusterIP != ip || a.Spec.Ports[0].TargetPort.IntValue() != 20005 {
		t.Errorf("updated a: cluster IP %s (was %s), %+v", a.Spec.ClusterIP, ip, a.Spec.Ports)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "b"}, &corev1.Service{}); !apierrors.IsNotFound(err) {
		t.Errorf("b no longer wanted: %v", err)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "other"}, &corev1.Service{}); err != nil {
		t.Errorf("a Service not the writer's: %v", err)
	}

	// A load balancer controller annotates a: the writer keeps its
	// annotation and does not write a again.
	a.Annotations["lb.example.com/pool"] = "blue"
	if err := c.Update(ctx, &a); err != nil {
		t.Fatal(err)
	}
	rv := a.ResourceVersion
	if err := w.Apply(ctx, []*corev1.Service{svc("a", 80, 20005)}); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "a"}, &a); err != nil {
		t.Fatal(err)
	}
	if a.ResourceVersion != rv || a.Annotations["lb.example.com/pool"] != "blue" {
		t.Errorf("a rewritten (resourceVersion %s, was %s) or its foreign annotation lost: %v", a.ResourceVersion, rv, a.Annotations)
	}

	// Someone deletes a: the next build's set brings it back.
	if err := c.Delete(ctx, &a); err != nil {
		t.Fatal(err)
	}
	if err := w.Apply(ctx, []*corev1.Service{svc("a", 80, 20005)}); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "a"}, &a); err != nil {
		t.Errorf("a wanted again: %v", err)
	}
	// No Gateway: none left.
	if err := w.Apply(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "a"}, &a); !apierrors.IsNotFound(err) {
		t.Errorf("a no longer wanted: %v", err)
	}
}
