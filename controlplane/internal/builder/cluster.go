package builder

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// clusterSettings are what a route sets on the clusters of its services
// beyond the backend and protocol: each combination is a cluster of its
// own, so that two routes with different settings never share one.
type clusterSettings struct {
	validation *ir.UpstreamValidation
	lb         string
	// idle is the idle timeout of upstream connections.
	idle      *time.Duration
	slowStart *ir.SlowStart
	// healthCheck is the route's HTTP health check; healthPort the
	// service's port for it (0: the port itself), resolved on the
	// endpoints as healthPorts (by address) and dnsHealthPort.
	healthCheck   *ir.HealthCheck
	healthPort    int
	healthPorts   map[string]uint32
	dnsHealthPort uint32
}

// key encodes the settings for the cluster's name; the settings that
// names had before idle and slowStart encode as they did.
func (s clusterSettings) key() string {
	if s.validation == nil && s.lb == "" && s.idle == nil && s.slowStart == nil && s.healthCheck == nil {
		return ""
	}
	k := fmt.Sprintf("%v|%s|<nil>", s.validation, s.lb)
	if s.idle != nil {
		k += "|idle=" + s.idle.String()
	}
	if s.slowStart != nil {
		k += fmt.Sprintf("|slowstart=%+v", *s.slowStart)
	}
	if hc := s.healthCheck; hc != nil {
		k += fmt.Sprintf("|hc=%v,%v,%d,%d,%+v|healthport=%d", hc.Interval, hc.Timeout, hc.UnhealthyThreshold, hc.HealthyThreshold, ptrValue(hc.HTTP), s.healthPort)
		if hc.TCP {
			k += "|tcp"
		}
	}
	return k
}

// settingsHash is the suffix of a cluster name that tells apart the
// clusters of one destination with different settings (k encodes them).
func settingsHash(k string) string {
	h := sha256.Sum256([]byte(k))
	return hex.EncodeToString(h[:4])
}

// clusterFor adds (or reuses) the cluster of one resolved backend.
// Clusters are shared by every route that resolves to the same Service
// port with the same protocol and settings.
func (b stage) clusterFor(prefix string, be *backend, protocol ir.Protocol, cs clusterSettings) *ir.Cluster {
	name := fmt.Sprintf("%s/%s/%s/%d", prefix, be.service.Namespace, be.service.Name, be.port.Port)
	if protocol != ir.HTTP1 {
		name += "/" + string(protocol)
	}
	if k := cs.key(); k != "" {
		name += "/" + settingsHash(k)
	}
	c, ok := b.r.snap.clusters[name]
	if !ok {
		c = newCluster(name, []*backend{be}, []uint32{0}, protocol, cs.validation, cs.lb, cs.idle)
		c.SlowStart = cs.slowStart
		c.HealthCheck = cs.healthCheck
		c.DNSHealthPort = cs.dnsHealthPort
		for i := range c.Endpoints {
			c.Endpoints[i].HealthPort = cs.healthPorts[c.Endpoints[i].Address]
		}
		b.r.snap.clusters[name] = c
	}
	return b.out.addCluster(c)
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
			c.DNSPort = destinationPort(be.port)
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
