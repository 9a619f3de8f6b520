package gatewayapi

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestGatewayTargetPort: a Service's target port is a Gateway's Envoy
// port only within range; a number a file could hold out of it is not
// wrapped into one.
func TestGatewayTargetPort(t *testing.T) {
	// 4294987296 is 2^32 + 20000: wrapped, it would be a Gateway port.
	for _, tp := range []intstr.IntOrString{intstr.FromString("4294987296"), intstr.FromInt32(-1), intstr.FromInt32(19999)} {
		if e, ok := gatewayTargetPort(corev1.ServicePort{TargetPort: tp}); ok {
			t.Errorf("gatewayTargetPort(%s) = %d, want none", tp.String(), e)
		}
	}
	if e, ok := gatewayTargetPort(corev1.ServicePort{TargetPort: intstr.FromInt32(20007)}); !ok || e != 20007 {
		t.Errorf("gatewayTargetPort(20007) = %d, %v", e, ok)
	}
}
