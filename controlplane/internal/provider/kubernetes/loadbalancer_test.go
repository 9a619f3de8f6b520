package kubernetes

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/builder"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/pipeline"
	"github.com/portcullis/portcullis/controlplane/internal/statuswriter"
	"github.com/portcullis/portcullis/controlplane/internal/testapiserver"
)

// TestHTTPProxyLoadBalancerFollowsEnvoyService runs the provider, the
// pipeline and the status writer against a real API server: a valid root
// HTTPProxy gets the Envoy Service's load balancer address in
// status.loadBalancer, and the new one when the Service's status changes
// (the provider watches it); an invalid root gets none.
func TestHTTPProxyLoadBalancerFollowsEnvoyService(t *testing.T) {
	api := testapiserver.Start(t, testapiserver.CRDDir(t))
	ctx := context.Background()
	c := api.Client
	create(t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "portcullis"}})
	envoy := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "portcullis", Name: "envoy"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
	echo := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "echo"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}
	root := func(name, service string) *contourv1.HTTPProxy {
		return &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
			Spec: contourv1.HTTPProxySpec{VirtualHost: &contourv1.VirtualHost{Fqdn: name + ".example.com"},
				Routes: []contourv1.Route{{Services: []contourv1.Service{{Name: service, Port: 80}}}}}}
	}
	create(t, c, envoy, echo, root("valid", "echo"), root("invalid", "missing"))
	setLoadBalancer := func(ip string) {
		t.Helper()
		get(t, c, client.ObjectKeyFromObject(envoy), envoy)
		envoy.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip}}
		if err := c.Status().Update(ctx, envoy); err != nil {
			t.Fatal(err)
		}
	}
	setLoadBalancer("198.51.100.7")

	r := startProvider(t, api.Config)
	writer := &statuswriter.Kubernetes{Cache: c, Client: c, Log: slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))}
	opts := pipeline.Options{Builder: builder.Options{EnvoyAddresses: []string{"envoy.example.com"}, EnvoyService: "portcullis/envoy"}}
	// follow waits for a snapshot where ok holds, runs the pipeline on it
	// and writes the statuses, as serve does.
	follow := func(what string, ok func(*objects.Set) error) {
		t.Helper()
		var set *objects.Set
		r.await(t, what, func(s *objects.Set) error {
			set = s
			return ok(s)
		})
		res := pipeline.Run(set, opts)
		writer.Write(ctx, pipeline.Statuses(set, res.Build.Status, metav1.Now()))
	}
	envoyAt := func(ip string) func(*objects.Set) error {
		return func(s *objects.Set) error {
			for _, svc := range s.Services {
				if svc.Name == "envoy" && slices.ContainsFunc(svc.Status.LoadBalancer.Ingress, func(in corev1.LoadBalancerIngress) bool { return in.IP == ip }) {
					return nil
				}
			}
			return fmt.Errorf("the Envoy Service is not at %s in the last snapshot", ip)
		}
	}
	check := func(name string, want ...corev1.LoadBalancerIngress) {
		t.Helper()
		p := &contourv1.HTTPProxy{}
		get(t, c, client.ObjectKey{Namespace: "default", Name: name}, p)
		if got := p.Status.LoadBalancer.Ingress; (len(got) != 0 || len(want) != 0) && !equality.Semantic.DeepEqual(got, want) {
			t.Errorf("%s: status.loadBalancer.ingress %v, want %v (currentStatus %s)", name, got, want, p.Status.CurrentStatus)
		}
	}

	follow("the Envoy Service at 198.51.100.7", envoyAt("198.51.100.7"))
	check("valid", corev1.LoadBalancerIngress{Hostname: "envoy.example.com"}, corev1.LoadBalancerIngress{IP: "198.51.100.7"})
	check("invalid")

	setLoadBalancer("198.51.100.8")
	follow("the Envoy Service at 198.51.100.8", envoyAt("198.51.100.8"))
	check("valid", corev1.LoadBalancerIngress{Hostname: "envoy.example.com"}, corev1.LoadBalancerIngress{IP: "198.51.100.8"})
	check("invalid")

	// A root that becomes invalid loses the address it was given.
	p := &contourv1.HTTPProxy{}
	get(t, c, client.ObjectKey{Namespace: "default", Name: "valid"}, p)
	p.Spec.Routes[0].Services[0].Name = "missing"
	update(t, c, p)
	follow("the valid root made invalid", func(s *objects.Set) error {
		for _, p := range s.HTTPProxies {
			if p.Name == "valid" && p.Spec.Routes[0].Services[0].Name == "missing" {
				return nil
			}
		}
		return fmt.Errorf("the valid root's change is not in the last snapshot")
	})
	check("valid")
	get(t, c, client.ObjectKey{Namespace: "default", Name: "valid"}, p)
	if p.Status.CurrentStatus != contourv1.StatusInvalid {
		t.Errorf("the root made invalid is %q, want %q", p.Status.CurrentStatus, contourv1.StatusInvalid)
	}
}
