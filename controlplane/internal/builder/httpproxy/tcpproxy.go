package httpproxy

import (
	"fmt"
	"math"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// tcpProxy validates a root's spec.tcpproxy against its TLS (secure, from
// secureHost; nil without spec.virtualhost.tls) into the host that proxies
// its TLS connections; nil when it has none (or an error). As Contour: a
// tcpproxy needs TLS, terminated (secretName) or passed through, and TLS
// passthrough needs a tcpproxy. Stricter than Contour: the virtual host's
// HTTP policies (authorization, processing, JWT, CORS, rate limits, IP
// filters) are errors next to a tcpproxy, whose connections no HTTP filter
// sees, rather than policies that silently do not apply.
func (b *rootBuilder) tcpProxy(p *contourv1.HTTPProxy, secure *ir.SecureVirtualHost, st *status.Object) *ir.TCPHost {
	t, vh := p.Spec.TCPProxy, p.Spec.VirtualHost
	fail := func(format string, args ...any) *ir.TCPHost {
		st.AddError(contourv1.ConditionTypeTCPProxyError, status.ReasonTCPProxyNotValid, fmt.Sprintf(format, args...))
		return nil
	}
	passthrough := vh.TLS != nil && vh.TLS.Passthrough
	switch {
	case t == nil && passthrough:
		return fail("Spec.VirtualHost.TLS.Passthrough requires Spec.TCPProxy: the connections must go to a service")
	case t == nil:
		return nil
	case vh.TLS == nil:
		st.AddError(contourv1.ConditionTypeTCPProxyError, status.ReasonTLSMustBeConfigured, "Spec.TCPProxy requires Spec.VirtualHost.TLS (a secretName, or passthrough): the TLS listener proxies the connections by SNI name")
		return nil
	}
	tcpProxyIncompatible(vh, passthrough, st)
	src, sst := b.tcpProxySource(p, st) // tcpproxy_include.go
	if src == nil {
		return nil
	}
	t = src.Spec.TCPProxy
	cs, allZero, ok := tcpProxySettings(t, sst)
	if !ok {
		return included(st, sst, src)
	}
	out := &ir.TCPHost{Passthrough: passthrough}
	if secure != nil && !passthrough {
		out.Secret, out.MinTLSVersion, out.MaxTLSVersion, out.ClientValidation = secure.Secret, secure.MinTLSVersion, secure.MaxTLSVersion, secure.ClientValidation
	}
	out.Clusters = b.tcpClusters(src, t.Services, cs, allZero, sst)
	if sst != st && !sst.Valid() {
		return included(st, sst, src)
	}
	return out
}

// tcpProxyIncompatible refuses the virtual host's settings that act on
// HTTP next to a tcpproxy: its HTTP policies, and two TLS settings of a
// terminated host that are an HCM's too (passthroughHost refuses them
// with passthrough): the fallback certificate's filter chain is the
// shared HTTP one, and x-forwarded-client-cert an HTTP header.
func tcpProxyIncompatible(vh *contourv1.VirtualHost, passthrough bool, st *status.Object) {
	for _, f := range []struct {
		field string
		set   bool
	}{
		{"Authorization", vh.Authorization != nil}, {"ExtProc", vh.ExtProc != nil}, {"JWTProviders", len(vh.JWTProviders) > 0},
		{"CORSPolicy", vh.CORSPolicy != nil}, {"RateLimitPolicy", vh.RateLimitPolicy != nil},
		{"IPAllowFilterPolicy", len(vh.IPAllowFilterPolicy) > 0}, {"IPDenyFilterPolicy", len(vh.IPDenyFilterPolicy) > 0},
	} {
		if f.set {
			st.AddError(contourv1.ConditionTypeTCPProxyError, status.ReasonTLSIncompatibleFeatures, fmt.Sprintf("Spec.VirtualHost.%s cannot be combined with Spec.TCPProxy: no HTTP filter sees the proxied connections", f.field))
		}
	}
	if !passthrough && vh.TLS.EnableFallbackCertificate {
		st.AddError(contourv1.ConditionTypeTCPProxyError, status.ReasonTLSIncompatibleFeatures, "Spec.VirtualHost.TLS.EnableFallbackCertificate cannot be combined with Spec.TCPProxy: the fallback certificate's filter chain serves HTTP, not the proxied connections")
	}
	if cv := vh.TLS.ClientValidation; !passthrough && cv != nil && cv.ForwardClientCertificate != nil {
		st.AddError(contourv1.ConditionTypeTCPProxyError, status.ReasonTLSIncompatibleFeatures, "Spec.VirtualHost.TLS.ClientValidation.ForwardClientCertificate cannot be combined with Spec.TCPProxy: the proxied connections carry no HTTP header to forward the certificate in")
	}
}

// tcpProxySettings checks a tcpproxy's settings shared by its services
// (at least one service, load balancer, health check, weights) into its
// clusters' settings; allZero: no service has a weight. False, with an
// error on sst (the tcpproxy's source's status), when one is invalid.
func tcpProxySettings(t *contourv1.TCPProxy, sst *status.Object) (cs core.ClusterSettings, allZero, ok bool) {
	if len(t.Services) == 0 {
		sst.AddError(contourv1.ConditionTypeTCPProxyError, status.ReasonNothingDefined, "Spec.TCPProxy: either services or an include must be specified")
		return cs, false, false
	}
	lb, ignored, err := tcpLoadBalancer(t.LoadBalancerPolicy)
	switch {
	case ignored:
		sst.AddWarning(contourv1.ConditionTypeTCPProxyError, status.ReasonIgnoredField, fmt.Sprintf("Spec.TCPProxy.LoadBalancerPolicy: the strategy %s has no effect on a tcpproxy (it hashes HTTP requests, and Envoy sees none in a proxied connection): RoundRobin is used", t.LoadBalancerPolicy.Strategy))
	case t.LoadBalancerPolicy != nil && len(t.LoadBalancerPolicy.RequestHashPolicies) > 0:
		sst.AddWarning(contourv1.ConditionTypeTCPProxyError, status.ReasonIgnoredField, "Spec.TCPProxy.LoadBalancerPolicy.RequestHashPolicies have no effect on a tcpproxy: Envoy sees no HTTP request in a proxied connection")
	}
	if err != nil {
		sst.AddError(contourv1.ConditionTypeTCPProxyError, status.ReasonTCPProxyNotValid, fmt.Sprintf("Spec.TCPProxy.LoadBalancerPolicy: %v", err))
		return cs, false, false
	}
	hc, err := core.TCPHealthCheck(t.HealthCheckPolicy)
	if err != nil {
		sst.AddError(contourv1.ConditionTypeTCPProxyError, status.ReasonTCPProxyNotValid, fmt.Sprintf("Spec.TCPProxy.HealthCheckPolicy: %v", err))
		return cs, false, false
	}
	allZero, err = serviceWeights(t.Services)
	if err != nil {
		sst.AddError(contourv1.ConditionTypeServiceError, status.ReasonServiceWeightInvalid, "Spec.TCPProxy: "+err.Error())
		return cs, false, false
	}
	return core.ClusterSettings{Lb: lb, HealthCheck: hc}, allZero, true
}

// tcpClusters resolves the services of src's tcpproxy into its weighted
// clusters, leaving out those that are invalid (with an error on sst) and
// those of weight 0.
func (b *rootBuilder) tcpClusters(src *contourv1.HTTPProxy, services []contourv1.Service, cs core.ClusterSettings, allZero bool, sst *status.Object) []ir.WeightedCluster {
	var out []ir.WeightedCluster
	for j, s := range services {
		c, ok := b.tcpService(src, j, s, cs, sst)
		if !ok {
			continue
		}
		switch {
		case allZero:
			c.Weight = 1
		case s.Weight <= 0:
			continue // Envoy's tcp_proxy wants weights of 1 or more: a service of weight 0 gets no connection
		default:
			c.Weight = uint32(min(s.Weight, math.MaxUint32))
		}
		out = append(out, c)
	}
	return out
}

// tcpService resolves service j of p's tcpproxy into its cluster, with
// what it shares with a route's service (serviceupstream.go): TLS to the
// service (protocol tls or h2, with validation), slow start and the
// health check port; false, with an error, when it is invalid. The fields
// that act on HTTP requests (headers, cookies, mirror) are refused by the
// fields table.
func (b *rootBuilder) tcpService(p *contourv1.HTTPProxy, j int, s contourv1.Service, cs core.ClusterSettings, st *status.Object) (ir.WeightedCluster, bool) {
	where := servicePlaces.at(j)
	errs := &routeErrors{st: st, where: "Spec.TCPProxy"}
	if s.Port < 1 || s.Port > 65535 {
		errs.add(contourv1.ConditionTypeServiceError, status.ReasonServicePortInvalid, "%s: service %q: port must be in the range 1-65535", where, s.Name)
		return ir.WeightedCluster{}, false
	}
	be, err := b.R.Backend(core.NsName(p.Namespace, s.Name), s.Port)
	if err != nil {
		errs.add(contourv1.ConditionTypeTCPProxyError, status.ReasonServiceUnresolvedReference, "%s: Service [%s:%d] is invalid or missing: %v", where, s.Name, s.Port, err) // Contour's type
		return ir.WeightedCluster{}, false
	}
	protocol, up, uv, ok := b.serviceTLS(p.Namespace, where, s, be, errs)
	if !ok {
		return ir.WeightedCluster{}, false
	}
	c, ok := b.serviceCluster(p, "tcpproxy", where, s, be, tcpProtocol(protocol), up, uv, cs, errs)
	if !ok {
		return ir.WeightedCluster{}, false
	}
	return ir.WeightedCluster{Cluster: c.Name}, true
}

// tcpProtocol is the cluster protocol of a tcpproxy's service, which
// Envoy sends the connection's bytes as they come: tls and h2 are TLS to
// the service (h2 offering ALPN h2, as Contour does: the proxied bytes
// must be HTTP/2), and h2c (Contour's HTTP/2 settings, which a TCP proxy
// does not use) is the plaintext cluster.
func tcpProtocol(p ir.Protocol) ir.Protocol {
	if p == ir.H2C {
		return ir.HTTP1
	}
	return p
}

// tcpLoadBalancer is the policy of a tcpproxy's clusters ("" for
// RoundRobin). Cookie and RequestHash hash HTTP requests, and there are
// none: as Contour, they are accepted and ignored (ignored: a warning that
// they have no effect), RoundRobin is used, and their requestHashPolicies
// with them; which upstream serves a connection never widens who may
// connect (docs/design/decisions.md, harmless fields). An unknown strategy
// is an error.
func tcpLoadBalancer(p *contourv1.LoadBalancerPolicy) (lb string, ignored bool, err error) {
	if p == nil {
		return "", false, nil
	}
	switch p.Strategy {
	case "", "RoundRobin":
		return "", false, nil
	case "WeightedLeastRequest", "Random":
		return p.Strategy, false, nil
	case "Cookie", "RequestHash":
		return "", true, nil
	}
	return "", false, fmt.Errorf("strategy %q is not supported for TCP proxying: use RoundRobin, WeightedLeastRequest or Random", p.Strategy)
}

// tcpVirtualHosts puts a served root with a tcpproxy on the listeners:
// its TLS connections go to tcp; its routes, if any, are served on the
// HTTP listener only (redirecting to HTTPS but for permitInsecure ones,
// irInsecureRoutes), as Contour does.
func (b *rootBuilder) tcpVirtualHosts(p *contourv1.HTTPProxy, fqdn string, origins ir.Origins, routes []Route, tcp *ir.TCPHost, proc procScope) {
	tcp.FQDN, tcp.Origins = fqdn, origins
	b.res.tcp = tcp
	root := ProxyRef(p.Namespace, p.Name)
	if !tcp.Passthrough {
		b.Out.SecretUses.Add(tcp.Secret, root)
		if cv := tcp.ClientValidation; cv != nil && cv.CASecret != "" {
			b.Out.SecretUses.Add(cv.CASecret, root)
		}
	}
	if len(routes) > 0 {
		b.res.insecure = append(b.res.insecure, &ir.VirtualHost{FQDN: fqdn, Origins: origins, Routes: sharedExtProc(InsecureRoutes(fqdn, routes, b.routeOrigin(p)), proc)})
	}
}

// tcpProxyOnChild refuses a tcpproxy on an HTTPProxy included by a root's
// includes (routes): only a tcpproxy's include could use it.
func tcpProxyOnChild(p *contourv1.HTTPProxy, st *status.Object) {
	if p.Spec.VirtualHost == nil && p.Spec.TCPProxy != nil {
		st.AddError(contourv1.ConditionTypeTCPProxyError, status.ReasonTCPProxyNotValid, "Spec.TCPProxy on an HTTPProxy included by routes' includes is not served: only a root's tcpproxy can proxy connections")
	}
}

// passthroughHost validates the TLS of a host that passes it through: the
// upstream has the certificate and sees the handshake, so Envoy's own TLS
// settings cannot apply.
func passthroughHost(t *contourv1.TLS, st *status.Object) *ir.SecureVirtualHost {
	for _, f := range []struct {
		field string
		set   bool
	}{
		{"SecretName", t.SecretName != ""}, {"ClientValidation", t.ClientValidation != nil},
		{"EnableFallbackCertificate", t.EnableFallbackCertificate},
		{"MinimumProtocolVersion", t.MinimumProtocolVersion != ""}, {"MaximumProtocolVersion", t.MaximumProtocolVersion != ""},
	} {
		if f.set {
			// Contour's reason: TLSConfigNotValid for a secretName,
			// TLSIncompatibleFeatures for the others.
			reason := status.ReasonTLSIncompatibleFeatures
			if f.field == "SecretName" {
				reason = status.ReasonTLSConfigNotValid
			}
			st.AddError(contourv1.ConditionTypeTLSError, reason, fmt.Sprintf("Spec.VirtualHost.TLS: both Passthrough and %s were specified: the service terminates a passed-through TLS", f.field))
		}
	}
	return &ir.SecureVirtualHost{}
}
