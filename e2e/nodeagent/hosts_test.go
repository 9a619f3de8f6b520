package nodeagent

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A Pod's /etc/hosts names the Pod and each Service with a ClusterIP by
// its DNS names, the bare name only in the Pod's namespace.
func TestHostsContent(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "a"}}
	svc := func(ns, name, ip string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: corev1.ServiceSpec{ClusterIP: ip}}
	}
	got := string(hostsContent(pod, "10.0.0.5", []*corev1.Service{
		svc("b", "db", "10.1.0.2"), svc("a", "xds", "10.1.0.1"), svc("a", "headless", corev1.ClusterIPNone), svc("a", "pending", ""),
	}))
	want := "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n10.0.0.5\tweb-1\n" +
		"10.1.0.1\txds.a.svc.cluster.local xds.a.svc xds.a xds\n" +
		"10.1.0.2\tdb.b.svc.cluster.local db.b.svc db.b\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
