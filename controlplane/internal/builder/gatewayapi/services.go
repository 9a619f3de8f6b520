package gatewayapi

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// With gateway.servicePerGateway each Gateway has Envoy ports of its own
// and a Service in front of them: clients reach a Gateway at its own
// Service's address on its listeners' ports, so Gateways never share a
// listener (any hostnames, any ports, like a Gateway per Envoy).

// The Envoy ports handed to Gateways: above the shared listeners' and the
// admin interface's usual ports.
const (
	GatewayPortFirst = 20000
	GatewayPortLast  = 29999
)

// GatewayServiceName is the name of a Gateway's Service in Envoy's
// namespace: readable, and unique by the hash of the Gateway's name.
func GatewayServiceName(gw types.NamespacedName) string {
	h := sha256.Sum256([]byte(gw.String()))
	prefix := strings.Trim(gw.Namespace+"-"+gw.Name, "-.")
	if len(prefix) > 40 {
		prefix = strings.TrimRight(prefix[:40], "-.")
	}
	return strings.ReplaceAll(prefix, ".", "-") + "-" + hex.EncodeToString(h[:])[:10]
}

// gatewayPorts hands each Gateway's listener ports their Envoy ports:
// the ports its Service already maps them to when still free, then, oldest
// Gateway first, the first free one from a place in the range that a hash
// of the Gateway (its UID) and the listener port picks. So a Gateway keeps
// its ports while others come and go, and, before its Service exists, a
// new Gateway's ports do not depend on which others are there: with the
// lowest free port instead, a Gateway created as another is deleted got
// the deleted one's port in one build and another in the next, and a
// client connected in between stayed on the wrong listener. A port left
// without one (the range is full) is missing from the map.
//
// A Gateway's ports are those of its listeners, then of the listeners of
// the ListenerSets it allows (more, listenersets.go): they are served on
// its Service too.
func gatewayPorts(snap *core.Snapshot, envoyNS string, gws []*gwapiv1.Gateway, more func(*gwapiv1.Gateway) []int32) map[types.NamespacedName]map[int32]uint32 {
	listenerPorts := func(gw *gwapiv1.Gateway) []int32 {
		ps := gatewayListenerPorts(gw)
		for _, p := range more(gw) {
			if !slices.Contains(ps, p) {
				ps = append(ps, p)
			}
		}
		return ps
	}
	gws = oldestGatewayFirst(gws)
	out := map[types.NamespacedName]map[int32]uint32{}
	taken := map[uint32]bool{}
	// Kept: what the Service maps now.
	for _, gw := range gws {
		key := core.NsName(gw.Namespace, gw.Name)
		out[key] = map[int32]uint32{}
		svc := snap.Services[core.NsName(envoyNS, GatewayServiceName(key))]
		if svc == nil || svc.Annotations[objects.GatewayServiceAnnotation] != key.String() {
			continue
		}
		keepGatewayPorts(out[key], listenerPorts(gw), svc, taken)
	}
	for _, gw := range gws {
		key := core.NsName(gw.Namespace, gw.Name)
		for _, p := range listenerPorts(gw) {
			if _, ok := out[key][p]; ok {
				continue
			}
			if e, ok := hashedGatewayPort(gatewayPortID(gw), p, taken); ok {
				out[key][p], taken[e] = e, true
			}
		}
	}
	return out
}

// oldestGatewayFirst is a copy of gws, oldest first (then by namespace
// and name): older Gateways keep and pick their ports first.
func oldestGatewayFirst(gws []*gwapiv1.Gateway) []*gwapiv1.Gateway {
	gws = slices.Clone(gws)
	slices.SortStableFunc(gws, func(a, b *gwapiv1.Gateway) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return gws
}

// gatewayListenerPorts are the distinct valid ports of a Gateway's
// listeners, in their order.
func gatewayListenerPorts(gw *gwapiv1.Gateway) []int32 {
	var ps []int32
	for _, l := range gw.Spec.Listeners {
		if l.Port >= 1 && l.Port <= 65535 && !slices.Contains(ps, l.Port) {
			ps = append(ps, l.Port)
		}
	}
	return ps
}

// keepGatewayPorts keeps in ports the Envoy ports the Gateway's Service
// svc maps its listener ports to, those still free and in the range.
func keepGatewayPorts(ports map[int32]uint32, listenerPorts []int32, svc *corev1.Service, taken map[uint32]bool) {
	for _, p := range listenerPorts {
		for _, sp := range svc.Spec.Ports {
			e, ok := gatewayTargetPort(sp)
			if sp.Port == p && ok && !taken[e] {
				ports[p], taken[e] = e, true
			}
		}
	}
}

// gatewayTargetPort is the Envoy port a Gateway Service's port maps to,
// when it is in the range of Gateways' ports (compared before the
// conversion: a wrapped number could fall in it).
func gatewayTargetPort(sp corev1.ServicePort) (uint32, bool) {
	e := sp.TargetPort.IntValue()
	if e < GatewayPortFirst || e > GatewayPortLast {
		return 0, false
	}
	return uint32(e), true
}

// gatewayPortID is what the hash of a Gateway's ports is of: its UID, or
// its name when read from files (no UID).
func gatewayPortID(gw *gwapiv1.Gateway) string {
	if gw.UID == "" {
		return core.NsName(gw.Namespace, gw.Name).String()
	}
	return string(gw.UID)
}

// hashedGatewayPort is the first Envoy port not taken from the place in
// the range that the hash of the Gateway's id and listener port p picks;
// false when the range is full.
func hashedGatewayPort(id string, p int32, taken map[uint32]bool) (uint32, bool) {
	const size = GatewayPortLast - GatewayPortFirst + 1
	h := sha256.Sum256([]byte(fmt.Sprintf("%s/%d", id, p)))
	start := binary.BigEndian.Uint32(h[:4]) % size
	for i := uint32(0); i < size; i++ {
		if e := GatewayPortFirst + (start+i)%size; !taken[e] {
			return e, true
		}
	}
	return 0, false
}

// gatewayService is the Service of a Gateway: in Envoy's namespace, with
// what the Service in front of Envoy says of how clients reach it (type,
// selector, traffic policies, its load balancer's class, source ranges and
// annotations: an internal load balancer stays internal) and a port per
// listener port to the Gateway's Envoy port.
func gatewayService(x *gwGateway, envoy *corev1.Service, ports map[int32]uint32) *corev1.Service {
	gw := x.gw
	key := core.NsName(gw.Namespace, gw.Name)
	label := strings.Trim(gw.Namespace+"."+gw.Name, "-.")
	if len(label) > 63 {
		label = strings.Trim(label[:63], "-.")
	}
	svc := &corev1.Service{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   envoy.Namespace,
			Name:        GatewayServiceName(key),
			Labels:      map[string]string{objects.GatewayServiceLabel: label},
			Annotations: inheritedAnnotations(envoy.Annotations),
		},
		Spec: corev1.ServiceSpec{
			Type:                          envoy.Spec.Type,
			Selector:                      envoy.Spec.Selector,
			LoadBalancerClass:             envoy.Spec.LoadBalancerClass,
			LoadBalancerSourceRanges:      envoy.Spec.LoadBalancerSourceRanges,
			AllocateLoadBalancerNodePorts: envoy.Spec.AllocateLoadBalancerNodePorts,
			IPFamilyPolicy:                envoy.Spec.IPFamilyPolicy,
			IPFamilies:                    envoy.Spec.IPFamilies,
			InternalTrafficPolicy:         envoy.Spec.InternalTrafficPolicy,
		},
	}
	svc.Annotations[objects.GatewayServiceAnnotation] = key.String()
	if svc.Spec.Type == corev1.ServiceTypeLoadBalancer || svc.Spec.Type == corev1.ServiceTypeNodePort {
		svc.Spec.ExternalTrafficPolicy = envoy.Spec.ExternalTrafficPolicy
	}
	if svc.Spec.Type == corev1.ServiceTypeExternalName || svc.Spec.Type == "" {
		svc.Spec.Type = corev1.ServiceTypeClusterIP
	}
	listenerPorts := make([]int32, 0, len(ports))
	for p := range ports {
		listenerPorts = append(listenerPorts, p)
	}
	slices.Sort(listenerPorts)
	tcp, udp := listenerTransports(x)
	for _, p := range listenerPorts {
		// Envoy ports are in the range of Gateways' ports.
		target := intstr.FromInt32(int32(min(ports[p], GatewayPortLast)))
		if tcp[p] {
			svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: fmt.Sprintf("port-%d", p), Protocol: corev1.ProtocolTCP, Port: p, TargetPort: target})
		}
		if udp[p] {
			svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: fmt.Sprintf("udp-%d", p), Protocol: corev1.ProtocolUDP, Port: p, TargetPort: target})
		}
	}
	return svc
}

// listenerTransports are the ports of a Gateway's listeners, its own and
// its ListenerSets' (the ports map says which are served), served over
// TCP and over UDP: a port number may be both.
func listenerTransports(x *gwGateway) (tcp, udp map[int32]bool) {
	tcp, udp = map[int32]bool{}, map[int32]bool{}
	for _, l := range x.listeners {
		if l.spec.Protocol == gwapiv1.UDPProtocolType {
			udp[l.spec.Port] = true
		} else {
			tcp[l.spec.Port] = true
		}
	}
	return tcp, udp
}

// inheritedAnnotations are the Envoy Service's annotations a Gateway's
// Service carries too (a cloud's load balancer settings), without those of
// the tools that manage the Envoy Service itself.
func inheritedAnnotations(from map[string]string) map[string]string {
	out := make(map[string]string, len(from)+1)
	for k, v := range from {
		if k == "kubectl.kubernetes.io/last-applied-configuration" || strings.HasPrefix(k, "meta.helm.sh/") || k == objects.GatewayServiceAnnotation {
			continue
		}
		out[k] = v
	}
	return out
}
