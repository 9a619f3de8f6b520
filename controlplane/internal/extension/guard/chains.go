package guard

import (
	"fmt"
	"slices"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tcpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/proto"
)

// Config is what the chain checks read: listeners, and the route
// configurations their connection managers name.
type Config struct {
	Listeners []*listenerv3.Listener
	Routes    []*routev3.RouteConfiguration
}

// chain is one filter chain, with what the invariant reads of it.
type chain struct {
	listener string
	// key is where it serves: its listener's address and its
	// filter_chain_match (or the default chain's place).
	key string
	fc  *listenerv3.FilterChain
	hcm *hcmv3.HttpConnectionManager
	rc  *routev3.RouteConfiguration
	tcp []string // the clusters of its tcp_proxy filters
	err error    // a filter does not decode
}

func key(parts ...proto.Message) string {
	var k []byte
	for _, p := range parts {
		b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(p)
		k = fmt.Appendf(k, "%d:%s|", len(b), b)
	}
	return string(k)
}

// chainsOf are l's filter chains, their route configurations from rcs.
func chainsOf(l *listenerv3.Listener, rcs map[string]*routev3.RouteConfiguration) []chain {
	addr := key(l.GetAddress())
	fcs := l.GetFilterChains()
	if d := l.GetDefaultFilterChain(); d != nil {
		fcs = append(slices.Clip(fcs), d)
	}
	out := make([]chain, 0, len(fcs))
	for i, fc := range fcs {
		c := chain{listener: l.GetName(), fc: fc, key: addr + key(fc.GetFilterChainMatch())}
		if i == len(l.GetFilterChains()) {
			c.key = addr + "default"
		}
		for _, f := range fc.GetFilters() {
			tc := f.GetTypedConfig()
			switch {
			case tc.MessageIs((*hcmv3.HttpConnectionManager)(nil)):
				h := &hcmv3.HttpConnectionManager{}
				if err := tc.UnmarshalTo(h); err != nil {
					c.err = err
					continue
				}
				c.hcm = h
				c.rc = h.GetRouteConfig()
				if rds := h.GetRds(); rds != nil {
					c.rc = rcs[rds.GetRouteConfigName()]
				}
			case tc.MessageIs((*tcpv3.TcpProxy)(nil)):
				t := &tcpv3.TcpProxy{}
				if err := tc.UnmarshalTo(t); err != nil {
					c.err = err
					continue
				}
				c.tcp = append(c.tcp, t.GetCluster())
				for _, w := range t.GetWeightedClusters().GetClusters() {
					c.tcp = append(c.tcp, w.GetName())
				}
			}
		}
		out = append(out, c)
	}
	return out
}

// reachesOurs reports whether the chain may send to one of Portcullis's
// clusters.
func (c chain) reachesOurs(ours Ours) bool {
	if slices.ContainsFunc(c.tcp, ours) {
		return true
	}
	for _, vh := range c.rc.GetVirtualHosts() {
		for _, r := range vh.GetRoutes() {
			if reachesOurs(r, ours) {
				return true
			}
		}
	}
	return false
}

// routingSettings are the connection manager's settings that decide which
// route, and which client address, a request has: an extension may not
// change them on a chain of Portcullis's (a path no longer normalized
// takes a route it could not, an address taken from a header passes an
// IP filter).
func routingSettings(h *hcmv3.HttpConnectionManager) *hcmv3.HttpConnectionManager {
	return &hcmv3.HttpConnectionManager{
		NormalizePath:                 h.GetNormalizePath(),
		MergeSlashes:                  h.GetMergeSlashes(),
		PathWithEscapedSlashesAction:  h.GetPathWithEscapedSlashesAction(),
		PathNormalizationOptions:      h.GetPathNormalizationOptions(),
		StripPortMode:                 h.GetStripPortMode(),
		StripMatchingHostPort:         h.GetStripMatchingHostPort(),
		StripTrailingHostDot:          h.GetStripTrailingHostDot(),
		UseRemoteAddress:              h.GetUseRemoteAddress(),
		XffNumTrustedHops:             h.GetXffNumTrustedHops(),
		OriginalIpDetectionExtensions: h.GetOriginalIpDetectionExtensions(),
		InternalAddressConfig:         h.GetInternalAddressConfig(),
		SkipXffAppend:                 h.GetSkipXffAppend(),
		ForwardClientCertDetails:      h.GetForwardClientCertDetails(),
		SetCurrentClientCertDetails:   h.GetSetCurrentClientCertDetails(),
	}
}

// checkHCM checks that a keeps b's protecting filters, unchanged and
// before the router, and its routing settings.
func checkHCM(b, a *hcmv3.HttpConnectionManager) []string {
	var out []string
	router := len(a.GetHttpFilters())
	for i, f := range a.GetHttpFilters() {
		if messageName(f.GetTypedConfig()) == "envoy.extensions.filters.http.router.v3.Router" {
			router = i
			break
		}
	}
	for _, f := range b.GetHttpFilters() {
		if !protectingTypes[messageName(f.GetTypedConfig())] {
			continue
		}
		i := slices.IndexFunc(a.GetHttpFilters(), func(g *hcmv3.HttpFilter) bool { return g.GetName() == f.GetName() })
		switch {
		case i < 0:
			out = append(out, fmt.Sprintf("filter %s was removed", f.GetName()))
		case !proto.Equal(a.GetHttpFilters()[i], f):
			out = append(out, fmt.Sprintf("filter %s was changed or disabled", f.GetName()))
		case i > router:
			out = append(out, fmt.Sprintf("filter %s was moved after the router", f.GetName()))
		}
	}
	if !proto.Equal(routingSettings(a), routingSettings(b)) {
		out = append(out, "the connection manager's routing settings (path normalization, host port matching, client address detection) changed")
	}
	return out
}

// checkChain checks a, a chain of the answer, against b, the one on the
// same address with the same match before.
func checkChain(ours Ours, b, a chain) []string {
	if a.fc == b.fc && a.rc == b.rc {
		return nil // untouched
	}
	var out []string
	if !proto.Equal(a.fc.GetTransportSocket(), b.fc.GetTransportSocket()) {
		out = append(out, "its TLS settings (transport socket) changed")
	}
	for _, c := range a.tcp {
		if ours(c) && !slices.Contains(b.tcp, c) {
			out = append(out, fmt.Sprintf("a tcp_proxy filter sends to cluster %q", c))
		}
	}
	switch {
	case b.hcm == nil:
		return out
	case a.hcm == nil:
		return out // the chain serves no HTTP any more: nothing reaches an upstream through it
	}
	out = append(out, checkHCM(b.hcm, a.hcm)...)
	if a.rc != b.rc {
		out = append(out, CheckRouteConfiguration(ProtectingFilters(b.hcm), ours, b.rc, a.rc)...)
	}
	return out
}

// CheckListeners checks the listeners of after, an answer, against
// before: every filter chain, by where it serves (its address and match),
// not by name.
func CheckListeners(ours Ours, before, after Config) []Violation {
	bRCs, aRCs := byName(before.Routes), byName(after.Routes)
	bChains := map[string]chain{}
	bListeners := map[string]*listenerv3.Listener{}
	for _, l := range before.Listeners {
		bListeners[key(l.GetAddress())] = l
		for _, c := range chainsOf(l, bRCs) {
			bChains[c.key] = c
		}
	}
	var out []Violation
	add := func(l *listenerv3.Listener, format string, args ...any) {
		out = append(out, Violation{TypeURL: resourcev3.ListenerType, Name: l.GetName(), Reason: fmt.Sprintf(format, args...)})
	}
	for _, l := range after.Listeners {
		if lb := bListeners[key(l.GetAddress())]; lb != nil {
			for _, f := range lb.GetListenerFilters() {
				if !slices.ContainsFunc(l.GetListenerFilters(), func(g *listenerv3.ListenerFilter) bool { return proto.Equal(f, g) }) {
					add(l, "listener filter %s was removed or changed", f.GetName())
				}
			}
		}
		for _, c := range chainsOf(l, aRCs) {
			if c.err != nil {
				add(l, "filter chain %q: a filter does not decode: %v", c.fc.GetName(), c.err)
				continue
			}
			b, ok := bChains[c.key]
			if !ok {
				if c.reachesOurs(ours) {
					add(l, "filter chain %q serves where no chain of Portcullis's did (a new address or match) and sends to Portcullis's clusters", c.fc.GetName())
				}
				continue
			}
			for _, r := range checkChain(ours, b, c) {
				add(l, "filter chain %q (was %q of listener %q): %s", c.fc.GetName(), b.fc.GetName(), b.listener, r)
			}
		}
	}
	return out
}

func byName(rcs []*routev3.RouteConfiguration) map[string]*routev3.RouteConfiguration {
	out := make(map[string]*routev3.RouteConfiguration, len(rcs))
	for _, rc := range rcs {
		out[rc.GetName()] = rc
	}
	return out
}
