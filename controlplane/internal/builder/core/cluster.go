package core

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// ClusterSettings are what a route sets on the clusters of its services
// beyond the backend and protocol: each combination is a cluster of its
// own, so that two routes with different settings never share one.
type ClusterSettings struct {
	Validation *ir.UpstreamValidation
	Lb         string
	// idle is the idle timeout of upstream connections.
	Idle      *time.Duration
	SlowStart *ir.SlowStart
	// healthCheck is the route's HTTP health check; healthPort the
	// service's port for it (0: the port itself), resolved on the
	// endpoints as healthPorts (by address) and dnsHealthPort.
	HealthCheck   *ir.HealthCheck
	HealthPort    int
	HealthPorts   map[string]uint32
	DNSHealthPort uint32
}

// Key encodes the settings for the cluster's name; the settings that
// names had before idle and slowStart encode as they did.
func (s ClusterSettings) Key() string {
	if s.Validation == nil && s.Lb == "" && s.Idle == nil && s.SlowStart == nil && s.HealthCheck == nil {
		return ""
	}
	k := ValidationKey(s.Validation) + "|" + s.Lb + "|<nil>"
	if s.Idle != nil {
		k += "|idle=" + s.Idle.String()
	}
	if s.SlowStart != nil {
		k += fmt.Sprintf("|slowstart=%+v", *s.SlowStart)
	}
	if hc := s.HealthCheck; hc != nil {
		k += fmt.Sprintf("|hc=%v,%v,%d,%d,%+v|healthport=%d", hc.Interval, hc.Timeout, hc.UnhealthyThreshold, hc.HealthyThreshold, PtrValue(hc.HTTP), s.HealthPort)
		if hc.TCP {
			k += "|tcp"
		}
	}
	return k
}

// ValidationKey encodes v as the settings of names made before
// SubjectURIs did (%v of the pointer), URIs after them when there are.
func ValidationKey(v *ir.UpstreamValidation) string {
	if v == nil {
		return "<nil>"
	}
	k := fmt.Sprintf("&{%s %s %v}", v.CASecret, v.SubjectName, v.SubjectNames)
	if len(v.SubjectURIs) > 0 {
		k += fmt.Sprintf("|uris=%v", v.SubjectURIs)
	}
	return k
}

// SettingsHash is the suffix of a cluster name that tells apart the
// clusters of one destination with different settings (k encodes them).
func SettingsHash(k string) string {
	h := sha256.Sum256([]byte(k))
	return hex.EncodeToString(h[:4])
}

// ClusterFor adds (or reuses) the cluster of one resolved backend, of
// the protocol the route resolved (from up's and its own) and the
// Service's circuit breakers (up, ServiceUpstream: a function of the
// Service, which the name holds). Clusters are shared by every route that
// resolves to the same Service port with the same protocol and settings:
// the name
// (prefix/namespace/name/port[/protocol][/settings]) is made in a buffer,
// and a string only for a new cluster, as thousands of routes resolve to
// the same few.
func (b Stage) ClusterFor(prefix string, be *Backend, protocol ir.Protocol, up Upstream, cs ClusterSettings) *ir.Cluster {
	var buf [128]byte
	name := append(buf[:0], prefix...)
	name = append(append(name, '/'), be.Service.Namespace...)
	name = append(append(name, '/'), be.Service.Name...)
	name = strconv.AppendInt(append(name, '/'), int64(be.Port.Port), 10)
	if protocol != ir.HTTP1 {
		name = append(append(name, '/'), protocol...)
	}
	if k := cs.Key(); k != "" {
		name = append(append(name, '/'), SettingsHash(k)...)
	}
	c, ok := b.R.Snap.Clusters[string(name)]
	if !ok {
		c = newCluster(string(name), []*Backend{be}, []uint32{0}, protocol, cs.Validation, cs.Lb, cs.Idle)
		c.SlowStart = cs.SlowStart
		c.CircuitBreakers = up.CircuitBreakers
		c.HealthCheck = cs.HealthCheck
		c.DNSHealthPort = cs.DNSHealthPort
		for i := range c.Endpoints {
			c.Endpoints[i].HealthPort = cs.HealthPorts[c.Endpoints[i].Address]
		}
		b.R.Snap.Clusters[c.Name] = c
	}
	return b.Out.AddCluster(c)
}

// newCluster is the cluster of backends bes, with weights when there are
// several.
func newCluster(name string, bes []*Backend, weights []uint32, protocol ir.Protocol, v *ir.UpstreamValidation, lb string, idle *time.Duration) *ir.Cluster {
	c := &ir.Cluster{Name: name, Protocol: protocol, Validation: v, LBPolicy: lb, IdleTimeout: idle}
	if v != nil {
		c.SNI = v.SubjectName
	}
	for i, be := range bes {
		if be.Service.Spec.Type == corev1.ServiceTypeExternalName {
			c.DNSName = be.Service.Spec.ExternalName
			c.DNSPort = destinationPort(be.Port)
			if c.SNI == "" && (protocol == ir.H2 || protocol == ir.TLS) {
				c.SNI = c.DNSName
			}
			continue
		}
		group := ""
		if len(bes) > 1 {
			group = be.Service.Name + ":" + strconv.Itoa(int(be.Port.Port))
		}
		for _, ep := range be.Endpoints {
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
