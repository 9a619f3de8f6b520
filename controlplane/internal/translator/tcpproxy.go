package translator

import (
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	tcpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

const tcpProxyFilterName = "envoy.filters.network.tcp_proxy"

// tcpHostChain is a TLS listener's filter chain of a host whose TLS
// connections are proxied over TCP, matched by SNI as a TLS host's and
// named as one's (a host name is one or the other): a tcp_proxy to its
// clusters and no HCM. With passthrough there is no transport socket (the
// upstream terminates the TLS Envoy only read the SNI of); otherwise
// Envoy terminates it with the host's certificate, advertising no ALPN
// protocol: the decrypted stream is the upstream's, whatever it speaks.
func tcpHostChain(prefix string, vh *ir.TCPHost) *listenerv3.FilterChain {
	name := secureName(prefix, vh.FQDN)
	tp := &tcpproxyv3.TcpProxy{StatPrefix: name}
	if len(vh.Clusters) == 1 {
		tp.ClusterSpecifier = &tcpproxyv3.TcpProxy_Cluster{Cluster: vh.Clusters[0].Cluster}
	} else {
		w := &tcpproxyv3.TcpProxy_WeightedCluster{}
		for _, c := range vh.Clusters {
			w.Clusters = append(w.Clusters, &tcpproxyv3.TcpProxy_WeightedCluster_ClusterWeight{Name: c.Cluster, Weight: c.Weight})
		}
		tp.ClusterSpecifier = &tcpproxyv3.TcpProxy_WeightedClusters{WeightedClusters: w}
	}
	chain := &listenerv3.FilterChain{
		Name:             name,
		FilterChainMatch: serverNames(vh.FQDN),
		Filters: []*listenerv3.Filter{{
			Name:       tcpProxyFilterName,
			ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: mustAny(tp)},
		}},
	}
	if !vh.Passthrough {
		chain.TransportSocket = downstreamTLSWithALPN(vh.Secret, vh.MinTLSVersion, vh.MaxTLSVersion, vh.ClientValidation, nil)
	}
	return chain
}

// tcpListener is a plaintext listener that proxies its connections over
// TCP (a Gateway's TCP listener): the filter chain of its one host, "*",
// without SNI match nor TLS, and no HCM.
func tcpListener(r *Resources, l *ir.Listener) {
	chains := make([]*listenerv3.FilterChain, len(l.TCPHosts))
	served := make([]hostOrigins, len(l.TCPHosts))
	for i, vh := range l.TCPHosts {
		chains[i] = tcpHostChain(hostsPrefix(l), vh)
		served[i] = tcpHostOrigins(vh)
	}
	r.Listeners = append(r.Listeners, &listenerv3.Listener{
		Name:         l.Name,
		Address:      socketAddress(l.Address, l.Port),
		FilterChains: chains,
	})
	r.Index.add(resourcev3.ListenerType, l.Name, &indexEntry{origins: l.Origins, hosts: served})
}

// tcpHostOrigins are the origins of a TCP host in its listener.
func tcpHostOrigins(vh *ir.TCPHost) hostOrigins {
	return hostOrigins{fqdn: vh.FQDN, vhost: vh.FQDN, origins: vh.Origins}
}
