// Package envoyvalidate checks that the real Envoy accepts the output of
// every golden case of the pipeline (../testdata). It is the one test of
// the pipeline that needs an installed tool, Envoy (`make tools`), so it
// lives apart: `go test ./internal/pipeline` needs none.
package envoyvalidate

import (
	"fmt"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/portcullis/portcullis/controlplane/internal/translator"
)

// staticBootstrap turns a set of xDS resources into a bootstrap that needs
// no management server.
func staticBootstrap(r *translator.Resources) (*bootstrapv3.Bootstrap, error) {
	routes := map[string]*routev3.RouteConfiguration{}
	for _, m := range r.Routes {
		rc := m.(*routev3.RouteConfiguration)
		routes[rc.Name] = rc
	}
	endpoints := map[string]*endpointv3.ClusterLoadAssignment{}
	for _, m := range r.Endpoints {
		cla := m.(*endpointv3.ClusterLoadAssignment)
		endpoints[cla.ClusterName] = cla
	}
	sr := &bootstrapv3.Bootstrap_StaticResources{}
	for _, m := range r.Listeners {
		l, err := staticListener(m.(*listenerv3.Listener), routes)
		if err != nil {
			return nil, err
		}
		sr.Listeners = append(sr.Listeners, l)
	}
	for _, m := range r.Clusters {
		c, err := staticCluster(m.(*clusterv3.Cluster), endpoints)
		if err != nil {
			return nil, err
		}
		sr.Clusters = append(sr.Clusters, c)
	}
	for _, m := range r.Secrets {
		sr.Secrets = append(sr.Secrets, proto.Clone(m).(*tlsv3.Secret))
	}
	return &bootstrapv3.Bootstrap{StaticResources: sr}, nil
}

// staticListener is a copy of the listener whose HCMs carry their route
// configurations inline and whose TLS contexts name static secrets.
func staticListener(in *listenerv3.Listener, routes map[string]*routev3.RouteConfiguration) (*listenerv3.Listener, error) {
	l := proto.Clone(in).(*listenerv3.Listener)
	chains := l.FilterChains
	if l.DefaultFilterChain != nil {
		chains = append(chains, l.DefaultFilterChain)
	}
	for _, fc := range chains {
		if err := staticTransportSocket(fc.TransportSocket, &tlsv3.DownstreamTlsContext{}); err != nil {
			return nil, err
		}
		for _, f := range fc.Filters {
			if err := inlineRoutes(l.Name, f, routes); err != nil {
				return nil, err
			}
		}
	}
	return l, nil
}

// inlineRoutes replaces the RDS reference of an HCM filter by the route
// configuration it names; other filters are left as they are.
func inlineRoutes(listener string, f *listenerv3.Filter, routes map[string]*routev3.RouteConfiguration) error {
	tc := f.GetTypedConfig()
	hcm := &hcmv3.HttpConnectionManager{}
	if tc == nil || !tc.MessageIs(hcm) {
		return nil
	}
	if err := tc.UnmarshalTo(hcm); err != nil {
		return err
	}
	if rds := hcm.GetRds(); rds != nil {
		rc, ok := routes[rds.RouteConfigName]
		if !ok {
			return fmt.Errorf("listener %s: route configuration %q is not among the resources", listener, rds.RouteConfigName)
		}
		hcm.RouteSpecifier = &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: rc}
	}
	a, err := anypb.New(hcm)
	if err != nil {
		return err
	}
	f.ConfigType = &listenerv3.Filter_TypedConfig{TypedConfig: a}
	return nil
}

// staticCluster is a copy of the cluster with its endpoints inline (for
// EDS) and its TLS context naming static secrets.
func staticCluster(in *clusterv3.Cluster, endpoints map[string]*endpointv3.ClusterLoadAssignment) (*clusterv3.Cluster, error) {
	c := proto.Clone(in).(*clusterv3.Cluster)
	if c.GetType() == clusterv3.Cluster_EDS {
		name := c.GetEdsClusterConfig().GetServiceName()
		if name == "" {
			name = c.Name
		}
		cla, ok := endpoints[name]
		if !ok {
			return nil, fmt.Errorf("cluster %s: no ClusterLoadAssignment %q among the resources", c.Name, name)
		}
		c.ClusterDiscoveryType = &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC}
		c.EdsClusterConfig = nil
		c.LoadAssignment = proto.Clone(cla).(*endpointv3.ClusterLoadAssignment)
	}
	if err := staticTransportSocket(c.TransportSocket, &tlsv3.UpstreamTlsContext{}); err != nil {
		return nil, err
	}
	return c, nil
}

// staticTransportSocket points the SDS references of a TLS transport
// socket at static secrets (an SdsSecretConfig without sds_config).
func staticTransportSocket(ts *corev3.TransportSocket, ctx interface {
	proto.Message
	GetCommonTlsContext() *tlsv3.CommonTlsContext
}) error {
	if ts == nil || ts.GetTypedConfig() == nil {
		return nil
	}
	if err := ts.GetTypedConfig().UnmarshalTo(ctx); err != nil {
		return err
	}
	if common := ctx.GetCommonTlsContext(); common != nil {
		for _, s := range common.TlsCertificateSdsSecretConfigs {
			s.SdsConfig = nil
		}
		if v := common.GetValidationContextSdsSecretConfig(); v != nil {
			v.SdsConfig = nil
		}
		if cv := common.GetCombinedValidationContext(); cv != nil && cv.ValidationContextSdsSecretConfig != nil {
			cv.ValidationContextSdsSecretConfig.SdsConfig = nil
		}
	}
	a, err := anypb.New(ctx)
	if err != nil {
		return err
	}
	ts.ConfigType = &corev3.TransportSocket_TypedConfig{TypedConfig: a}
	return nil
}
