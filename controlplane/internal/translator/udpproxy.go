package translator

import (
	xdscorev3 "github.com/cncf/xds/go/xds/core/v3"
	matcherv3 "github.com/cncf/xds/go/xds/type/matcher/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	udpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/udp/udp_proxy/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

const udpProxyFilterName = "envoy.filters.udp_listener.udp_proxy"

// udpListener is a UDP listener (a Gateway's UDP listener): a UDP socket
// (udp_listener_config) whose one listener filter, the UDP proxy, sends
// each client's datagrams (a session per source address and port) to an
// endpoint of its cluster picked when the session starts, and closes the
// session after its idle timeout. A cluster that does not exist (an
// invalid backend) makes Envoy drop the datagrams. It has no filter
// chains: UDP listeners have none.
func udpListener(r *Resources, l *ir.Listener) {
	u := l.UDP
	// The route is the matcher's: its cluster field is deprecated.
	route := &matcherv3.Matcher_OnMatch{OnMatch: &matcherv3.Matcher_OnMatch_Action{Action: &xdscorev3.TypedExtensionConfig{
		Name: "route", TypedConfig: mustAny(&udpproxyv3.Route{Cluster: u.Cluster}),
	}}}
	proxy := &udpproxyv3.UdpProxyConfig{
		StatPrefix:     l.Name,
		RouteSpecifier: &udpproxyv3.UdpProxyConfig_Matcher{Matcher: &matcherv3.Matcher{OnNoMatch: route}},
		IdleTimeout:    durationpb.New(u.IdleTimeout),
	}
	addr := socketAddress(l.Address, l.Port)
	addr.GetSocketAddress().Protocol = corev3.SocketAddress_UDP
	r.Listeners = append(r.Listeners, &listenerv3.Listener{
		Name:              l.Name,
		Address:           addr,
		UdpListenerConfig: &listenerv3.UdpListenerConfig{},
		ListenerFilters: []*listenerv3.ListenerFilter{{
			Name:       udpProxyFilterName,
			ConfigType: &listenerv3.ListenerFilter_TypedConfig{TypedConfig: mustAny(proxy)},
		}},
	})
	r.Index.add(resourcev3.ListenerType, l.Name, &indexEntry{origins: l.Origins.Union(u.Origins)})
}
