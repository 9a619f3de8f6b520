// Package bootstrap writes the Envoy bootstrap that points Envoy at the
// portcullis xDS server: everything else Envoy learns over ADS.
package bootstrap

import (
	"fmt"
	"net"
	"strconv"
	"time"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
)

// XDSClusterName is the bootstrap's static cluster of the xDS server.
const XDSClusterName = "portcullis-xds"

// Options of the bootstrap.
type Options struct {
	// XDSAddress is the portcullis xDS server, host:port.
	XDSAddress string
	// AdminAddress is where Envoy's admin interface listens, host:port.
	// Keep it on loopback: it can change Envoy's state.
	AdminAddress string
	// NodeID and NodeCluster identify this Envoy to the control plane.
	NodeID      string
	NodeCluster string
	// SotW makes Envoy use state-of-the-world xDS instead of incremental
	// (delta) xDS. Delta sends only what changed: with thousands of route
	// configurations, a one-route change is one resource, not all of them.
	SotW bool
	// ReadyAddress, when set, is a listener (host:port) that serves only
	// GET /ready of the admin interface, for readiness probes (ready.go).
	ReadyAddress string
	// StatsAddress, when set, is a listener (host:port) that serves only
	// GET /stats/prometheus of the admin interface, for Prometheus.
	StatsAddress string
	// TLS, when set, connects to the xDS server over mutual TLS (tls.go).
	TLS *TLS
}

// Build returns the bootstrap as JSON (which Envoy also reads as YAML).
func Build(o Options) ([]byte, error) {
	xdsHost, xdsPort, err := SplitHostPort(o.XDSAddress)
	if err != nil {
		return nil, fmt.Errorf("xds address: %w", err)
	}
	adminHost, adminPort, err := SplitHostPort(o.AdminAddress)
	if err != nil {
		return nil, fmt.Errorf("admin address: %w", err)
	}
	xds, err := xdsCluster(xdsHost, xdsPort, o.TLS)
	if err != nil {
		return nil, err
	}
	b := &bootstrapv3.Bootstrap{
		Node:             &corev3.Node{Id: o.NodeID, Cluster: o.NodeCluster},
		Admin:            &bootstrapv3.Admin{Address: socket(adminHost, adminPort)},
		DynamicResources: dynamicResources(o.SotW),
		StaticResources:  &bootstrapv3.Bootstrap_StaticResources{Clusters: []*clusterv3.Cluster{xds}},
	}
	for _, l := range []struct {
		what, addr string
		make       func(string, uint32) (*listenerv3.Listener, error)
	}{{"ready address", o.ReadyAddress, readyListener}, {"stats address", o.StatsAddress, statsListener}} {
		if l.addr == "" {
			continue
		}
		host, port, err := SplitHostPort(l.addr)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", l.what, err)
		}
		lis, err := l.make(host, port)
		if err != nil {
			return nil, err
		}
		b.StaticResources.Listeners = append(b.StaticResources.Listeners, lis)
	}
	if len(b.StaticResources.Listeners) > 0 {
		b.StaticResources.Clusters = append(b.StaticResources.Clusters, adminCluster(adminHost, adminPort))
	}
	if err := b.ValidateAll(); err != nil {
		return nil, err
	}
	return protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(b)
}

// dynamicResources takes listeners and clusters (and through them the
// rest) over ADS from the xDS cluster: delta xDS, or state of the world
// when sotw.
func dynamicResources(sotw bool) *bootstrapv3.Bootstrap_DynamicResources {
	ads := &corev3.ConfigSource{
		ResourceApiVersion:    corev3.ApiVersion_V3,
		ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}},
	}
	apiType := corev3.ApiConfigSource_DELTA_GRPC
	if sotw {
		apiType = corev3.ApiConfigSource_GRPC
	}
	return &bootstrapv3.Bootstrap_DynamicResources{
		AdsConfig: &corev3.ApiConfigSource{
			ApiType:             apiType,
			TransportApiVersion: corev3.ApiVersion_V3,
			GrpcServices: []*corev3.GrpcService{{TargetSpecifier: &corev3.GrpcService_EnvoyGrpc_{
				EnvoyGrpc: &corev3.GrpcService_EnvoyGrpc{ClusterName: XDSClusterName},
			}}},
			SetNodeOnFirstMessageOnly: true,
		},
		LdsConfig: ads,
		CdsConfig: ads,
	}
}

// xdsCluster is the static cluster of the xDS server: HTTP/2 (gRPC), over
// mutual TLS when tlsOpts is set.
func xdsCluster(host string, port uint32, tlsOpts *TLS) (*clusterv3.Cluster, error) {
	h2, err := anypb.New(&httpv3.HttpProtocolOptions{
		UpstreamProtocolOptions: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_{ExplicitHttpConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig{
			ProtocolConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_Http2ProtocolOptions{Http2ProtocolOptions: &corev3.Http2ProtocolOptions{}},
		}},
	})
	if err != nil {
		return nil, err
	}
	var transport *corev3.TransportSocket
	if tlsOpts != nil {
		t := *tlsOpts
		if err := t.validate(host); err != nil {
			return nil, err
		}
		if transport, err = t.transportSocket(); err != nil {
			return nil, err
		}
	}
	return &clusterv3.Cluster{
		Name:                 XDSClusterName,
		ConnectTimeout:       durationpb.New(5 * time.Second),
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STRICT_DNS},
		LoadAssignment: &endpointv3.ClusterLoadAssignment{
			ClusterName: XDSClusterName,
			Endpoints: []*endpointv3.LocalityLbEndpoints{{LbEndpoints: []*endpointv3.LbEndpoint{{
				HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{Address: socket(host, port)}},
			}}}},
		},
		TypedExtensionProtocolOptions: map[string]*anypb.Any{"envoy.extensions.upstreams.http.v3.HttpProtocolOptions": h2},
		TransportSocket:               transport,
	}, nil
}

func socket(host string, port uint32) *corev3.Address {
	return &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
		Address: host, PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port},
	}}}
}

// SplitHostPort parses host:port for an Envoy socket address.
func SplitHostPort(addr string) (string, uint32, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil || p == 0 {
		return "", 0, fmt.Errorf("invalid port in %q", addr)
	}
	return host, uint32(p), nil
}
