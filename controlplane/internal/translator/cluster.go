package translator

import (
	"slices"
	"strings"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

const httpProtocolOptionsName = "envoy.extensions.upstreams.http.v3.HttpProtocolOptions"

// defaultConnectTimeout and edsType are shared by the thousands of
// clusters of a large translation (a message is never modified once
// built).
var (
	defaultConnectTimeout = durationpb.New(2 * time.Second)
	edsType               = &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS}
)

// clusterBlock holds an EDS cluster's messages, to be allocated together.
type clusterBlock struct {
	cluster clusterv3.Cluster
	eds     clusterv3.Cluster_EdsClusterConfig
}

func cluster(c *ir.Cluster) *clusterv3.Cluster {
	b := new(clusterBlock)
	out := &b.cluster
	out.Name, out.ConnectTimeout, out.LbPolicy = c.Name, defaultConnectTimeout, lbPolicy(c.LBPolicy)
	if c.ConnectTimeout != 0 {
		out.ConnectTimeout = durationpb.New(c.ConnectTimeout)
	}
	slowStart(out, c)
	switch {
	case c.Extension != nil:
		// An extension's backend: no endpoints until its
		// PostClusterModify gives some (or another discovery type).
		out.ClusterDiscoveryType = &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC}
		out.LoadAssignment = &endpointv3.ClusterLoadAssignment{ClusterName: c.Name}
	case c.DNSName != "":
		out.ClusterDiscoveryType = &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STRICT_DNS}
		out.DnsLookupFamily = dnsLookupFamily(c.DNSLookupFamily)
		out.LoadAssignment = &endpointv3.ClusterLoadAssignment{
			ClusterName: c.Name,
			Endpoints: []*endpointv3.LocalityLbEndpoints{{
				LbEndpoints: []*endpointv3.LbEndpoint{new(endpointBlock).lbEndpoint(c.DNSName, c.DNSPort, c.DNSHealthPort)},
			}},
		}
	default:
		// No service_name: Envoy asks EDS for the cluster's own name,
		// which the endpoints carry (saves a name per cluster at scale).
		out.ClusterDiscoveryType = edsType
		b.eds.EdsConfig = adsConfigSource()
		out.EdsClusterConfig = &b.eds
	}

	out.TypedExtensionProtocolOptions = protocolOptions(c)
	if c.Protocol == ir.H2 || c.Protocol == ir.TLS {
		out.TransportSocket = upstreamTLS(c)
	}
	out.HealthChecks = healthChecks(c.HealthCheck)
	out.CircuitBreakers = circuitBreakers(c.CircuitBreakers)
	if c.LocalityWeighted {
		// Without it Envoy ignores the groups' weights.
		out.CommonLbConfig = &clusterv3.Cluster_CommonLbConfig{LocalityConfigSpecifier: &clusterv3.Cluster_CommonLbConfig_LocalityWeightedLbConfig_{
			LocalityWeightedLbConfig: &clusterv3.Cluster_CommonLbConfig_LocalityWeightedLbConfig{},
		}}
	}
	return out
}

// protocolOptions are the cluster's HTTP protocol options: none for HTTP/1.1
// without an idle timeout, which is Envoy's default (at scale these would
// be a third of a plain cluster's bytes).
func protocolOptions(c *ir.Cluster) map[string]*anypb.Any {
	h2 := c.Protocol == ir.H2 || c.Protocol == ir.H2C
	if !h2 && c.IdleTimeout == nil {
		return nil
	}
	opts := &httpv3.HttpProtocolOptions{}
	if h2 {
		opts.UpstreamProtocolOptions = &httpv3.HttpProtocolOptions_ExplicitHttpConfig_{ExplicitHttpConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig{
			ProtocolConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_Http2ProtocolOptions{Http2ProtocolOptions: &corev3.Http2ProtocolOptions{}},
		}}
	} else {
		opts.UpstreamProtocolOptions = &httpv3.HttpProtocolOptions_ExplicitHttpConfig_{ExplicitHttpConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig{
			ProtocolConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_HttpProtocolOptions{HttpProtocolOptions: &corev3.Http1ProtocolOptions{}},
		}}
	}
	if c.IdleTimeout != nil {
		opts.CommonHttpProtocolOptions = &corev3.HttpProtocolOptions{IdleTimeout: durationpb.New(*c.IdleTimeout)}
	}
	return map[string]*anypb.Any{httpProtocolOptionsName: mustAny(opts)}
}

// loadAssignment groups endpoints by their backing Service, so that the
// weights of an ExtensionService's targets apply. Groups are few (one per
// Service), and the messages of all endpoints are allocated in one block:
// at scale there are thousands of clusters of one or two endpoints each.
func loadAssignment(c *ir.Cluster) *endpointv3.ClusterLoadAssignment {
	cla := &endpointv3.ClusterLoadAssignment{ClusterName: c.Name}
	blocks := make([]endpointBlock, len(c.Endpoints))
	for i, e := range c.Endpoints {
		var g *endpointv3.LocalityLbEndpoints
		for _, have := range cla.Endpoints {
			if have.Locality.SubZone == e.Group {
				g = have
				break
			}
		}
		if g == nil {
			g = &endpointv3.LocalityLbEndpoints{Locality: &corev3.Locality{SubZone: e.Group}}
			if e.Weight > 0 {
				g.LoadBalancingWeight = wrapperspb.UInt32(e.Weight)
			}
			cla.Endpoints = append(cla.Endpoints, g)
		}
		g.LbEndpoints = append(g.LbEndpoints, blocks[i].lbEndpoint(e.Address, e.Port, e.HealthPort))
	}
	slices.SortStableFunc(cla.Endpoints, func(a, b *endpointv3.LocalityLbEndpoints) int {
		return strings.Compare(a.Locality.SubZone, b.Locality.SubZone)
	})
	return cla
}

// endpointBlock holds the messages of one endpoint, to be allocated
// together (they live and die together).
type endpointBlock struct {
	lb   endpointv3.LbEndpoint
	id   endpointv3.LbEndpoint_Endpoint
	ep   endpointv3.Endpoint
	addr corev3.Address
	sa   corev3.Address_SocketAddress
	sock corev3.SocketAddress
	port corev3.SocketAddress_PortValue
}

// lbEndpoint is the endpoint addr:port, health-checked on healthPort (0:
// on port), made of b's messages.
func (b *endpointBlock) lbEndpoint(addr string, port, healthPort uint32) *endpointv3.LbEndpoint {
	b.port.PortValue = port
	b.sock.Address, b.sock.PortSpecifier = addr, &b.port
	b.sa.SocketAddress = &b.sock
	b.addr.Address = &b.sa
	b.ep.Address = &b.addr
	if healthPort != 0 {
		b.ep.HealthCheckConfig = &endpointv3.Endpoint_HealthCheckConfig{PortValue: healthPort}
	}
	b.id.Endpoint = &b.ep
	b.lb.HostIdentifier = &b.id
	return &b.lb
}

// dnsLookupFamily is the address family a DNS cluster resolves: most
// upstreams listen on IPv4, so by default IPv4 first, then IPv6.
func dnsLookupFamily(f string) clusterv3.Cluster_DnsLookupFamily {
	switch f {
	case "v4":
		return clusterv3.Cluster_V4_ONLY
	case "v6":
		return clusterv3.Cluster_V6_ONLY
	case "auto":
		return clusterv3.Cluster_AUTO
	}
	return clusterv3.Cluster_V4_PREFERRED
}
