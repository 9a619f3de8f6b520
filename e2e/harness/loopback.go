package harness

import (
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// LoopbackExternalName points a Service at a process on 127.0.0.1 for the
// real API server, which refuses loopback addresses in EndpointSlices: an
// ExternalName Service for localhost, its port mapped to the process's.
func LoopbackExternalName(namespace, name string, port, target int) []client.Object {
	return []client.Object{&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "localhost",
			Ports: []corev1.ServicePort{{Name: "main", Port: int32(port), TargetPort: intstr.FromInt(target), Protocol: corev1.ProtocolTCP}}}}}
}

// LoopbackEndpointSlice is a Service and its EndpointSlice pointing at a
// process on 127.0.0.1, as a cluster would have them for a pod.
func LoopbackEndpointSlice(namespace, name string, port, target int) []client.Object {
	return loopbackEndpointSlice(namespace, name, port, target, corev1.ProtocolTCP)
}

// LoopbackUDPEndpointSlice is LoopbackEndpointSlice for a UDP port (a
// UDPEcho's).
func LoopbackUDPEndpointSlice(namespace, name string, port, target int) []client.Object {
	return loopbackEndpointSlice(namespace, name, port, target, corev1.ProtocolUDP)
}

func loopbackEndpointSlice(namespace, name string, port, target int, proto corev1.Protocol) []client.Object {
	portName := "main"
	p := int32(target)
	ready := true
	return []client.Object{
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: portName, Port: int32(port), Protocol: proto}}}},
		&discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: namespace, Name: name + "-local", Labels: map[string]string{discoveryv1.LabelServiceName: name}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: &portName, Port: &p, Protocol: &proto}},
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"127.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		},
	}
}
