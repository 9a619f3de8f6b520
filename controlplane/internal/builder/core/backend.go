package core

import (
	"fmt"
	"net"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// Backend is one resolved Service port.
type Backend struct {
	Service *corev1.Service
	Port    corev1.ServicePort
	// endpoints are the ready addresses behind the port.
	Endpoints []ir.Endpoint
	// total counts the port's endpoints, ready or not.
	total int
}

// Backend finds the Service port a route or ExtensionService names,
// and its ready endpoints. The error says what is wrong in words for a
// status message.
func (r *Resolver) Backend(key types.NamespacedName, port int) (*Backend, error) {
	return r.backend(key, port, "")
}

// UDPBackend is Backend for datagrams (a UDPRoute's backends): the
// Service port of that number and protocol UDP (a Service may have a TCP
// and a UDP port of one number, DNS's 53), and its ready endpoints.
func (r *Resolver) UDPBackend(key types.NamespacedName, port int) (*Backend, error) {
	return r.backend(key, port, corev1.ProtocolUDP)
}

// backend finds the Service port of that number (and protocol, unless "":
// the first of that number) and its ready endpoints.
func (r *Resolver) backend(key types.NamespacedName, port int, proto corev1.Protocol) (*Backend, error) {
	svc := r.service(key)
	if svc == nil {
		return nil, fmt.Errorf("%s %q not found", serviceKind, key.String())
	}
	var sp *corev1.ServicePort
	for i := range svc.Spec.Ports {
		if int(svc.Spec.Ports[i].Port) == port && (proto == "" || portProtocol(svc.Spec.Ports[i].Protocol) == proto) {
			sp = &svc.Spec.Ports[i]
			break
		}
	}
	if sp == nil {
		if svc.Spec.Type != corev1.ServiceTypeExternalName {
			if proto != "" {
				return nil, fmt.Errorf("%s %q has no %s port %d", serviceKind, key.String(), proto, port)
			}
			return nil, fmt.Errorf("%s %q has no port %d", serviceKind, key.String(), port)
		}
		if port < 1 || port > maxPort {
			return nil, fmt.Errorf("%s %q: %d is not a port number (1-%d)", serviceKind, key.String(), port, maxPort)
		}
		// ExternalName services often list no ports: the port is the
		// destination's.
		sp = &corev1.ServicePort{Port: int32(port), Protocol: portProtocol(proto)}
	}
	be := &Backend{Service: svc, Port: *sp}
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		if err := r.Opts().externalNameAllowed(svc.Spec.ExternalName); err != nil {
			return nil, fmt.Errorf("%s %q: %w", serviceKind, key.String(), err)
		}
		return be, nil
	}
	slices := r.endpointSlices(key) // recorded on every lookup, memoized or not
	k := readyKey{key, sp.Name}
	ready, ok := r.Snap.ready[k]
	if !ok {
		ready.endpoints, ready.total = readyEndpoints(slices, *sp)
		r.Snap.ready[k] = ready
	}
	be.Endpoints, be.total = ready.endpoints, ready.total
	return be, nil
}

// readyKey is a Service port by Service and port name, which is all
// readyEndpoints reads of the port.
type readyKey struct {
	service  types.NamespacedName
	portName string
}

type readyEndpointsOf struct {
	endpoints []ir.Endpoint
	total     int
}

// readyEndpoints lists the ready endpoints of a Service port from its
// EndpointSlices, matched by port name as Kubernetes does, and counts all
// of them, ready or not.
func readyEndpoints(slices []*discoveryv1.EndpointSlice, sp corev1.ServicePort) (out []ir.Endpoint, total int) {
	type endpointID struct {
		addr string
		port uint32
	}
	seen := map[endpointID]bool{}
	for _, slice := range slices {
		port := slicePort(slice, sp.Name, sp.Protocol)
		if port == 0 {
			continue
		}
		for _, ep := range slice.Endpoints {
			ready := ep.Conditions.Ready == nil || *ep.Conditions.Ready
			for _, addr := range ep.Addresses {
				id := endpointID{addr, port}
				if seen[id] {
					continue
				}
				seen[id] = true
				total++
				if ready {
					out = append(out, ir.Endpoint{Address: addr, Port: port})
				}
			}
		}
	}
	return out, total
}

// portProtocol is a port's protocol, TCP when unset (the API's default).
func portProtocol(p corev1.Protocol) corev1.Protocol {
	if p == "" {
		return corev1.ProtocolTCP
	}
	return p
}

// slicePort is the port of an IP EndpointSlice named name (the Service
// port's name) of protocol proto (the Service port's; TCP when unset); 0
// for none, or for a negative one (only a file could hold it: the API
// server refuses it).
func slicePort(slice *discoveryv1.EndpointSlice, name string, proto corev1.Protocol) uint32 {
	if slice.AddressType != discoveryv1.AddressTypeIPv4 && slice.AddressType != discoveryv1.AddressTypeIPv6 {
		return 0
	}
	proto = portProtocol(proto)
	var port int32
	for _, p := range slice.Ports {
		if PtrValue(p.Name) == name && portProtocol(PtrValue(p.Protocol)) == proto && p.Port != nil {
			port = *p.Port
		}
	}
	return NonNegativeUint32(port)
}

// maxPort is the highest TCP port.
const maxPort = 65535

// NonNegativeUint32 is v as a uint32; a negative v, which only a file
// could hold where Kubernetes validates a port or count, is 0 rather than
// a wrapped 4-billion value.
func NonNegativeUint32(v int32) uint32 {
	if v < 0 {
		return 0
	}
	return uint32(v)
}

// destinationPort is the port Envoy connects to for a Service port: the
// API server defaults targetPort to port, so this is the port unless the
// Service maps it elsewhere (a target port that is not a port number is
// not used).
func destinationPort(sp corev1.ServicePort) uint32 {
	if tp := sp.TargetPort.IntValue(); tp > 0 && tp <= maxPort {
		return uint32(tp)
	}
	return NonNegativeUint32(sp.Port)
}

// externalNameAllowed applies the ExternalName policy of Options.
func (o *Options) externalNameAllowed(name string) error {
	if !o.ExternalNameServices {
		return fmt.Errorf("ExternalName Services are disabled (start portcullis with --enable-external-name-services)")
	}
	return o.LoopbackAllowed(externalNameKind, name)
}

// externalNameKind is what loopbackAllowed's messages call an
// ExternalName.
const externalNameKind = "ExternalName"

// serviceKind is the kind of Kubernetes object the status messages of
// backend name ("Service \"ns/name\" not found"): a kind keeps its
// capital at the start of a message.
const serviceKind = "Service"

// LoopbackAllowed refuses a name (what: "ExternalName", "host") that
// names Envoy's own host, unless Options.LoopbackExternalNames.
func (o *Options) LoopbackAllowed(what, name string) error {
	if o.LoopbackExternalNames {
		return nil
	}
	host := strings.TrimSuffix(strings.ToLower(name), ".")
	if ip := net.ParseIP(host); ip != nil {
		if ip.IsLoopback() || ip.IsUnspecified() || ip.IsLinkLocalUnicast() {
			return fmt.Errorf("%s %q is a loopback or link-local address: refused", what, name)
		}
		return nil
	}
	first, _, _ := strings.Cut(host, ".")
	switch {
	case strings.HasPrefix(first, "localhost") || strings.HasSuffix(host, ".localhost"):
		// localhost, localhost.localdomain, localhost4.localdomain4, ...
		return fmt.Errorf("%s %q names this host, from where it could reach Envoy's admin interface: refused", what, name)
	case !strings.Contains(host, "."):
		// Envoy resolves through its own hosts file and search domains
		// first: a single label is a name of Envoy's host ("vm",
		// "ip6-localhost") or of its surroundings, never an external one.
		return fmt.Errorf("%s %q is a single label, which Envoy resolves relative to its own host (hosts file, search domains; it could reach Envoy's admin interface): use a fully qualified name", what, name)
	}
	return nil
}
