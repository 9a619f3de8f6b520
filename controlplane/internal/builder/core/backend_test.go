package core

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestExternalNameAllowed: with ExternalName Services on, names that
// resolve to this host are refused, including the aliases of a hosts file
// (Envoy resolves through /etc/hosts: "vm 127.0.0.1" let a route reach
// Envoy's admin interface) and single-label names, which only Envoy's own
// hosts file and search domains give a meaning.
func TestExternalNameAllowed(t *testing.T) {
	o := &Options{ExternalNameServices: true}
	for name, ok := range map[string]bool{
		"db.example.com":              true,
		"api.example.com.":            true,
		"svc.other.svc.cluster.local": true,
		"localhost":                   false,
		"LOCALHOST.":                  false,
		"a.localhost":                 false,
		"localhost.localdomain":       false,
		"localhost4.localdomain4":     false,
		"localhost6":                  false,
		"ip6-localhost":               false,
		"ip6-loopback":                false,
		"vm":                          false,
		"127.0.0.1":                   false,
		"127.1.2.3":                   false,
		"::1":                         false,
		"::ffff:127.0.0.1":            false,
		"0.0.0.0":                     false,
		"169.254.169.254":             false,
	} {
		if err := o.externalNameAllowed(name); (err == nil) != ok {
			t.Errorf("externalNameAllowed(%q) = %v, want allowed %v", name, err, ok)
		}
	}
	o.LoopbackExternalNames = true
	if err := o.externalNameAllowed("localhost"); err != nil {
		t.Errorf("with LoopbackExternalNames: %v", err)
	}
}

// TestPortConversions: ports read from objects are converted to Envoy's
// uint32 only within range; a number a file could hold out of it is not
// wrapped into another port.
func TestPortConversions(t *testing.T) {
	for _, tc := range []struct {
		name string
		sp   corev1.ServicePort
		want uint32
	}{
		{"port", corev1.ServicePort{Port: 80}, 80},
		{"target port", corev1.ServicePort{Port: 80, TargetPort: intstr.FromInt32(8080)}, 8080},
		{"named target port", corev1.ServicePort{Port: 80, TargetPort: intstr.FromString("http")}, 80},
		{"target port past 65535", corev1.ServicePort{Port: 80, TargetPort: intstr.FromString("4294967376")}, 80},
		{"negative port", corev1.ServicePort{Port: -1}, 0},
	} {
		if got := destinationPort(tc.sp); got != tc.want {
			t.Errorf("%s: destinationPort = %d, want %d", tc.name, got, tc.want)
		}
	}
}
