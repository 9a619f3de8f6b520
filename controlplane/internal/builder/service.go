package builder

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// backend is one resolved Service port.
type backend struct {
	service *corev1.Service
	port    corev1.ServicePort
	// endpoints are the ready addresses behind the port.
	endpoints []ir.Endpoint
	// total counts the port's endpoints, ready or not.
	total int
}

// resolveService finds the Service port a route or ExtensionService names,
// and its ready endpoints. The error says what is wrong in words for a
// status message.
func (r *Resolver) backend(key types.NamespacedName, port int) (*backend, error) {
	svc := r.service(key)
	if svc == nil {
		return nil, fmt.Errorf("Service %q not found", key.String())
	}
	var sp *corev1.ServicePort
	for i := range svc.Spec.Ports {
		if int(svc.Spec.Ports[i].Port) == port {
			sp = &svc.Spec.Ports[i]
			break
		}
	}
	if sp == nil {
		if svc.Spec.Type != corev1.ServiceTypeExternalName {
			return nil, fmt.Errorf("Service %q has no port %d", key.String(), port)
		}
		// ExternalName services often list no ports: the port is the
		// destination's.
		sp = &corev1.ServicePort{Port: int32(port), Protocol: corev1.ProtocolTCP}
	}
	be := &backend{service: svc, port: *sp}
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		if err := r.opts().externalNameAllowed(svc.Spec.ExternalName); err != nil {
			return nil, fmt.Errorf("Service %q: %w", key.String(), err)
		}
		return be, nil
	}
	be.endpoints, be.total = readyEndpoints(r.endpointSlices(key), *sp)
	return be, nil
}

// readyEndpoints lists the ready endpoints of a Service port from its
// EndpointSlices, matched by port name as Kubernetes does, and counts all
// of them, ready or not.
func readyEndpoints(slices []*discoveryv1.EndpointSlice, sp corev1.ServicePort) (out []ir.Endpoint, total int) {
	seen := map[string]bool{}
	for _, slice := range slices {
		if slice.AddressType != discoveryv1.AddressTypeIPv4 && slice.AddressType != discoveryv1.AddressTypeIPv6 {
			continue
		}
		var port int32
		for _, p := range slice.Ports {
			name := ""
			if p.Name != nil {
				name = *p.Name
			}
			proto := corev1.ProtocolTCP
			if p.Protocol != nil {
				proto = *p.Protocol
			}
			if name == sp.Name && proto == corev1.ProtocolTCP && p.Port != nil {
				port = *p.Port
			}
		}
		if port == 0 {
			continue
		}
		for _, ep := range slice.Endpoints {
			ready := ep.Conditions.Ready == nil || *ep.Conditions.Ready
			for _, addr := range ep.Addresses {
				id := addr + ":" + strconv.Itoa(int(port))
				if seen[id] {
					continue
				}
				seen[id] = true
				total++
				if ready {
					out = append(out, ir.Endpoint{Address: addr, Port: uint32(port)})
				}
			}
		}
	}
	return out, total
}

// clusterFor adds (or reuses) the cluster of one resolved backend.
// Clusters are shared by every route that resolves to the same Service
// port with the same protocol and validation.
func (b stage) clusterFor(prefix string, be *backend, protocol ir.Protocol, v *ir.UpstreamValidation, lb string, idle *time.Duration) *ir.Cluster {
	name := fmt.Sprintf("%s/%s/%s/%d", prefix, be.service.Namespace, be.service.Name, be.port.Port)
	if protocol != ir.HTTP1 {
		name += "/" + string(protocol)
	}
	if v != nil || lb != "" || idle != nil {
		h := sha256.Sum256([]byte(fmt.Sprintf("%v|%s|%v", v, lb, idle)))
		name += "/" + hex.EncodeToString(h[:4])
	}
	if c, ok := b.out.clusters[name]; ok {
		return c
	}
	return b.out.addCluster(newCluster(name, []*backend{be}, []uint32{0}, protocol, v, lb, idle))
}

// newCluster is the cluster of backends bes, with weights when there are
// several.
func newCluster(name string, bes []*backend, weights []uint32, protocol ir.Protocol, v *ir.UpstreamValidation, lb string, idle *time.Duration) *ir.Cluster {
	c := &ir.Cluster{Name: name, Protocol: protocol, Validation: v, LBPolicy: lb, IdleTimeout: idle}
	if v != nil {
		c.SNI = v.SubjectName
	}
	for i, be := range bes {
		if be.service.Spec.Type == corev1.ServiceTypeExternalName {
			c.DNSName = be.service.Spec.ExternalName
			// The API server defaults targetPort to port, so this is the
			// port unless the Service maps it elsewhere.
			c.DNSPort = uint32(be.port.Port)
			if tp := be.port.TargetPort.IntValue(); tp > 0 {
				c.DNSPort = uint32(tp)
			}
			if c.SNI == "" && (protocol == ir.H2 || protocol == ir.TLS) {
				c.SNI = c.DNSName
			}
			continue
		}
		group := ""
		if len(bes) > 1 {
			group = be.service.Name + ":" + strconv.Itoa(int(be.port.Port))
		}
		for _, ep := range be.endpoints {
			ep.Group = group
			if len(bes) > 1 {
				// Envoy needs a weight on every group once one has one.
				ep.Weight = max(weights[i], 1)
			}
			c.Endpoints = append(c.Endpoints, ep)
		}
	}
	return c
}

// externalNameAllowed applies the ExternalName policy of Options.
func (o *Options) externalNameAllowed(name string) error {
	if !o.ExternalNameServices {
		return fmt.Errorf("ExternalName Services are disabled (start portcullis with --enable-external-name-services)")
	}
	if o.LoopbackExternalNames {
		return nil
	}
	host := strings.TrimSuffix(strings.ToLower(name), ".")
	if ip := net.ParseIP(host); ip != nil {
		if ip.IsLoopback() || ip.IsUnspecified() || ip.IsLinkLocalUnicast() {
			return fmt.Errorf("ExternalName %q is a loopback or link-local address: refused", name)
		}
		return nil
	}
	first, _, _ := strings.Cut(host, ".")
	switch {
	case strings.HasPrefix(first, "localhost") || strings.HasSuffix(host, ".localhost"):
		// localhost, localhost.localdomain, localhost4.localdomain4, ...
		return fmt.Errorf("ExternalName %q names this host, from where it could reach Envoy's admin interface: refused", name)
	case !strings.Contains(host, "."):
		// Envoy resolves through its own hosts file and search domains
		// first: a single label is a name of Envoy's host ("vm",
		// "ip6-localhost") or of its surroundings, never an external one.
		return fmt.Errorf("ExternalName %q is a single label, which Envoy resolves relative to its own host (hosts file, search domains; it could reach Envoy's admin interface): use a fully qualified name", name)
	}
	return nil
}
