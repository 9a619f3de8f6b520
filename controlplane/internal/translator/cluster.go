package translator

import (
	"sort"
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

func cluster(c *ir.Cluster) *clusterv3.Cluster {
	timeout := c.ConnectTimeout
	if timeout == 0 {
		timeout = 2 * time.Second
	}
	out := &clusterv3.Cluster{
		Name:           c.Name,
		ConnectTimeout: durationpb.New(timeout),
		LbPolicy:       lbPolicy(c.LBPolicy),
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
				LbEndpoints: []*endpointv3.LbEndpoint{lbEndpoint(c.DNSName, c.DNSPort, c.DNSHealthPort)},
			}},
		}
	default:
		out.ClusterDiscoveryType = &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS}
		out.EdsClusterConfig = &clusterv3.Cluster_EdsClusterConfig{EdsConfig: adsConfigSource(), ServiceName: c.Name}
	}

	out.TypedExtensionProtocolOptions = protocolOptions(c)
	if c.Protocol == ir.H2 || c.Protocol == ir.TLS {
		out.TransportSocket = upstreamTLS(c)
	}
	out.HealthChecks = healthChecks(c.HealthCheck)
	out.CircuitBreakers = circuitBreakers(c.CircuitBreakers)
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
// weights of an ExtensionService's targets apply.
func loadAssignment(c *ir.Cluster) *endpointv3.ClusterLoadAssignment {
	cla := &endpointv3.ClusterLoadAssignment{ClusterName: c.Name}
	groups := map[string]*endpointv3.LocalityLbEndpoints{}
	var order []string
	for _, e := range c.Endpoints {
		g, ok := groups[e.Group]
		if !ok {
			g = &endpointv3.LocalityLbEndpoints{Locality: &corev3.Locality{SubZone: e.Group}}
			if e.Weight > 0 {
				g.LoadBalancingWeight = wrapperspb.UInt32(e.Weight)
			}
			groups[e.Group] = g
			order = append(order, e.Group)
		}
		g.LbEndpoints = append(g.LbEndpoints, lbEndpoint(e.Address, e.Port, e.HealthPort))
	}
	sort.Strings(order)
	for _, k := range order {
		cla.Endpoints = append(cla.Endpoints, groups[k])
	}
	return cla
}

// lbEndpoint is one endpoint; a healthPort other than 0 is the port its
// health checks use.
func lbEndpoint(addr string, port, healthPort uint32) *endpointv3.LbEndpoint {
	ep := &endpointv3.Endpoint{Address: socketAddress(addr, port)}
	if healthPort != 0 {
		ep.HealthCheckConfig = &endpointv3.Endpoint_HealthCheckConfig{PortValue: healthPort}
	}
	return &endpointv3.LbEndpoint{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: ep}}
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
