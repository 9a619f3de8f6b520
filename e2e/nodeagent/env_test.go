package nodeagent

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// A container's environment as the kubelet makes it: image, Service links
// (sorted), envFrom with its prefix, then env with the downward API and
// $(VAR) expansion; a later value keeps the name's first place.
func TestContainerEnv(t *testing.T) {
	ns := "apps"
	cs := fake.NewClientset(
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "my-db"},
			Spec: corev1.ServiceSpec{ClusterIP: "10.0.0.7", Ports: []corev1.ServicePort{{Name: "sql-port", Port: 5432}, {Port: 9000, Protocol: corev1.ProtocolUDP}}}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "headless"},
			Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Ports: []corev1.ServicePort{{Port: 80}}}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: "kubernetes"},
			Spec: corev1.ServiceSpec{ClusterIP: "10.0.0.1", Ports: []corev1.ServicePort{{Name: "https", Port: 443}}}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cfg"}, Data: map[string]string{"B": "2", "A": "1"}},
	)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p", Labels: map[string]string{"app": "x"}},
		Status:     corev1.PodStatus{PodIP: "10.1.0.5", HostIPs: []corev1.HostIP{{IP: "192.0.2.1"}, {IP: "2001:db8::1"}}},
	}
	c := &corev1.Container{
		EnvFrom: []corev1.EnvFromSource{{Prefix: "CFG_", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}},
		Env: []corev1.EnvVar{
			{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			{Name: "APP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}}},
			{Name: "HOSTS", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.hostIPs"}}},
			{Name: "URL", Value: "$(POD).$(CFG_A):$(MY_DB_SERVICE_PORT) $$(POD)"},
			{Name: "IMAGE_VAR", Value: "overridden"},
		},
	}
	env, vals, err := containerEnv(context.Background(), cs, pod, c, []string{"IMAGE_VAR=image", "PATH=/bin"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"IMAGE_VAR=overridden", "PATH=/bin",
		"KUBERNETES_PORT=tcp://10.0.0.1:443", "KUBERNETES_PORT_443_TCP=tcp://10.0.0.1:443", "KUBERNETES_PORT_443_TCP_ADDR=10.0.0.1",
		"KUBERNETES_PORT_443_TCP_PORT=443", "KUBERNETES_PORT_443_TCP_PROTO=tcp", "KUBERNETES_SERVICE_HOST=10.0.0.1",
		"KUBERNETES_SERVICE_PORT=443", "KUBERNETES_SERVICE_PORT_HTTPS=443",
		"MY_DB_PORT=tcp://10.0.0.7:5432", "MY_DB_PORT_5432_TCP=tcp://10.0.0.7:5432", "MY_DB_PORT_5432_TCP_ADDR=10.0.0.7",
		"MY_DB_PORT_5432_TCP_PORT=5432", "MY_DB_PORT_5432_TCP_PROTO=tcp", "MY_DB_PORT_9000_UDP=udp://10.0.0.7:9000",
		"MY_DB_PORT_9000_UDP_ADDR=10.0.0.7", "MY_DB_PORT_9000_UDP_PORT=9000", "MY_DB_PORT_9000_UDP_PROTO=udp",
		"MY_DB_SERVICE_HOST=10.0.0.7", "MY_DB_SERVICE_PORT=5432", "MY_DB_SERVICE_PORT_SQL_PORT=5432",
		"CFG_A=1", "CFG_B=2",
		"POD=p", "APP=x", "HOSTS=192.0.2.1,2001:db8::1", "URL=p.1:5432 $(POD)",
	}
	if !slices.Equal(env, want) {
		t.Errorf("environment:\n got %q\nwant %q", env, want)
	}
	if vals["URL"] != "p.1:5432 $(POD)" {
		t.Errorf("vals[URL] = %q", vals["URL"])
	}
	if _, err := fieldValue(pod, "spec.unknown"); err == nil {
		t.Error("an unsupported downward API field was accepted")
	}
}
