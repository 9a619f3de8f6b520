package controlplane

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/apis/projectcontour/v1alpha1"
	"github.com/portcullis/portcullis/e2e/harness"
)

func init() {
	utilruntime.Must(contourv1.AddToScheme(harness.Scheme))
	utilruntime.Must(v1alpha1.AddToScheme(harness.Scheme))
}

const (
	namespace = "bench"
	// services is how many backend Services the routes share.
	services = 20
	routes   = 5
)

// host is the FQDN of root i.
func host(i int) string { return fmt.Sprintf("host-%d.bench.example.com", i) }

// shared are the objects every root uses: its namespace, the TLS Secret,
// the authorization ExtensionService and the backend Services, with
// EndpointSlices (addresses nobody dials: the benchmark measures
// configuration, not traffic).
func shared(cert *harness.KeyPair) []client.Object {
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}},
		cert.Secret(namespace, "tls"),
		&v1alpha1.ExtensionService{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "auth"},
			Spec: v1alpha1.ExtensionServiceSpec{Services: []v1alpha1.ExtensionServiceTarget{{Name: "auth", Port: 9000}}}},
	}
	objs = append(objs, service("auth", 9000, "10.30.0.1")...)
	for s := 0; s < services; s++ {
		objs = append(objs, service(fmt.Sprintf("svc-%d", s), 80, fmt.Sprintf("10.31.%d.1", s), fmt.Sprintf("10.31.%d.2", s))...)
	}
	return objs
}

func service(name string, port int32, addrs ...string) []client.Object {
	portName, tcp := "main", corev1.ProtocolTCP
	ready := true
	es := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: namespace, Name: name + "-1", Labels: map[string]string{discoveryv1.LabelServiceName: name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: &portName, Port: &port, Protocol: &tcp}},
	}
	for _, a := range addrs {
		es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{Addresses: []string{a}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}})
	}
	return []client.Object{
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: portName, Port: port, Protocol: tcp}}}},
		es,
	}
}

// root is root HTTPProxy i: TLS, authorization, 5 routes and one include.
// Each extra path is one more route, which Envoy answers itself, over
// HTTPS, with a 200 whose body is the path, without calling the
// authorization server (a change is measured until Envoy answers it: the
// addresses of the auth server and of the Services are not dialled).
func root(i int, extra ...string) *contourv1.HTTPProxy {
	p := &contourv1.HTTPProxy{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: fmt.Sprintf("root-%d", i)},
		Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{
				Fqdn: host(i),
				TLS:  &contourv1.TLS{SecretName: "tls"},
				Authorization: &contourv1.AuthorizationServer{
					ExtensionServiceRef: contourv1.ExtensionServiceReference{Name: "auth"},
					AuthPolicy:          &contourv1.AuthorizationPolicy{Context: map[string]string{"root": fmt.Sprint(i)}},
				},
			},
			Includes: []contourv1.Include{{Name: fmt.Sprintf("child-%d", i), Conditions: []contourv1.MatchCondition{{Prefix: "/child"}}}},
		},
	}
	for r := 0; r < routes; r++ {
		p.Spec.Routes = append(p.Spec.Routes, contourv1.Route{
			Conditions: []contourv1.MatchCondition{{Prefix: fmt.Sprintf("/r%d", r)}},
			Services:   []contourv1.Service{{Name: fmt.Sprintf("svc-%d", (i+r)%services), Port: 80}},
		})
	}
	for _, path := range extra {
		p.Spec.Routes = append(p.Spec.Routes, contourv1.Route{
			Conditions:           []contourv1.MatchCondition{{Prefix: path}},
			AuthPolicy:           &contourv1.AuthorizationPolicy{Disabled: true},
			DirectResponsePolicy: &contourv1.HTTPDirectResponsePolicy{StatusCode: 200, Body: path},
		})
	}
	return p
}

func child(i int) *contourv1.HTTPProxy {
	return &contourv1.HTTPProxy{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: fmt.Sprintf("child-%d", i)},
		Spec: contourv1.HTTPProxySpec{Routes: []contourv1.Route{{
			Services: []contourv1.Service{{Name: fmt.Sprintf("svc-%d", i%services), Port: 80}},
		}}},
	}
}
