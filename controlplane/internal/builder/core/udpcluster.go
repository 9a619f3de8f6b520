package core

import (
	"crypto/sha256"
	"encoding/hex"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// UDPClusterFor adds (or reuses) the one cluster of a UDP rule's
// backends bes (weights alike, none 0): Envoy's UDP proxy sends a
// session to one cluster, so the backends' weights are the weights of
// their endpoints' groups (locality weighted load balancing), not of
// clusters. One backend is its Service port's cluster
// (service/namespace/name/port/udp), shared by every route to it; several
// share one named after them and their weights (udp/<hash>). The
// sessions through it are bounded by its max_connections circuit
// breaker: the Services' (the tightest of their
// projectcontour.io/max-connections), else Envoy's default, 1024.
func (b Stage) UDPClusterFor(bes []*Backend, weights []uint32) *ir.Cluster {
	bes, weights = sameBackendsOnce(bes, weights)
	if len(bes) == 1 {
		up, _ := ServiceUpstream(bes[0]) // the caller refused an invalid one
		return b.ClusterFor("service", bes[0], ir.UDP, up, ClusterSettings{})
	}
	var key strings.Builder
	for i, be := range bes {
		key.WriteString(be.Service.Namespace + "/" + be.Service.Name + ":" + strconv.Itoa(int(be.Port.Port)) + "=" + strconv.Itoa(int(weights[i])) + ";")
	}
	h := sha256.Sum256([]byte(key.String()))
	name := "udp/" + hex.EncodeToString(h[:8])
	if c, ok := b.R.Snap.Clusters[name]; ok {
		return b.Out.AddCluster(c)
	}
	c := &ir.Cluster{Name: name, Protocol: ir.UDP, LocalityWeighted: true}
	for i, be := range bes {
		// The group names the Service port across namespaces.
		group := be.Service.Namespace + "/" + be.Service.Name + ":" + strconv.Itoa(int(be.Port.Port))
		for _, ep := range be.Endpoints {
			ep.Group, ep.Weight = group, weights[i]
			c.Endpoints = append(c.Endpoints, ep)
		}
		up, _ := ServiceUpstream(be)
		if cb := up.CircuitBreakers; cb != nil && cb.MaxConnections > 0 {
			if c.CircuitBreakers == nil || cb.MaxConnections < c.CircuitBreakers.MaxConnections {
				c.CircuitBreakers = &ir.CircuitBreakers{MaxConnections: cb.MaxConnections}
			}
		}
	}
	b.R.Snap.Clusters[name] = c
	return b.Out.AddCluster(c)
}

// sameBackendsOnce is bes with a Service port named twice once, with the
// sum of its weights: a group per Service port.
func sameBackendsOnce(bes []*Backend, weights []uint32) ([]*Backend, []uint32) {
	var outB []*Backend
	var outW []uint32
	for i, be := range bes {
		j := slices.IndexFunc(outB, func(o *Backend) bool {
			return o.Service.Namespace == be.Service.Namespace && o.Service.Name == be.Service.Name && o.Port.Port == be.Port.Port
		})
		if j < 0 {
			outB, outW = append(outB, be), append(outW, weights[i])
			continue
		}
		outW[j] = uint32(min(uint64(outW[j])+uint64(weights[i]), math.MaxUint32))
	}
	return outB, outW
}
