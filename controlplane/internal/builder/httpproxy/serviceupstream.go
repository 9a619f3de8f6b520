package httpproxy

import (
	"fmt"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// What a service asks of its cluster beyond the backend, the same for a
// route's services and a tcpproxy's: the protocol with its TLS validation
// (serviceTLS), then slow start and the health check port
// (serviceCluster). errs.where names the route or tcpproxy, where the
// service in it.

// serviceTLS validates service s's protocol and upstream validation,
// with what the Service's annotations ask of backend be (its protocol,
// unless s names one, as in Contour, and its circuit breakers); false,
// with an error, when any is invalid.
func (b *rootBuilder) serviceTLS(namespace, where string, s contourv1.Service, be *core.Backend, errs *routeErrors) (ir.Protocol, core.Upstream, *ir.UpstreamValidation, bool) {
	up, aerr := core.ServiceUpstream(be)
	if aerr != nil {
		errs.add(contourv1.ConditionTypeServiceError, aerr.Reason, "%s: Service [%s:%d] %v", where, s.Name, s.Port, aerr)
		return "", up, nil, false
	}
	protocol := up.Protocol
	if s.Protocol != nil {
		var err error
		if protocol, err = core.ServiceProtocol(s.Protocol); err != nil {
			errs.add(contourv1.ConditionTypeServiceError, status.ReasonUnsupportedProtocol, "%s: Service [%s:%d] %v", where, s.Name, s.Port, err)
			return "", up, nil, false
		}
	}
	uv, err := b.ServiceValidation(s.UpstreamValidation, protocol, namespace)
	if core.IsNotDelegated(err) {
		// Contour's reason and condition type for a CA Secret of another
		// namespace that does not delegate it.
		errs.add(contourv1.ConditionTypeTLSError, status.ReasonCACertificateNotDelegated, "%s: Service [%s:%d] UpstreamValidation.CACertificate: %v", where, s.Name, s.Port, err)
		return "", up, nil, false
	}
	if err != nil {
		errs.add(contourv1.ConditionTypeServiceError, status.ReasonTLSUpstreamValidation, "%s: Service [%s:%d] TLS upstream validation policy error: %v", where, s.Name, s.Port, err)
		return "", up, nil, false
	}
	return protocol, up, uv, true
}

// serviceCluster adds the cluster of service s of p (resolved to be),
// with the settings cs of its route or tcpproxy (scope, for the messages)
// and its own slow start and health port; false, with an error, when
// they are invalid.
func (b *rootBuilder) serviceCluster(p *contourv1.HTTPProxy, scope, where string, s contourv1.Service, be *core.Backend, protocol ir.Protocol, up core.Upstream, uv *ir.UpstreamValidation, cs core.ClusterSettings, errs *routeErrors) (*ir.Cluster, bool) {
	var err error
	if cs.SlowStart, err = slowStart(s.SlowStartPolicy, cs.Lb); err != nil {
		errs.add(contourv1.ConditionTypeServiceError, status.ReasonSlowStartInvalid, "%s.SlowStartPolicy: %v", where, err)
		return nil, false
	}
	if s.HealthPort != 0 && cs.HealthCheck == nil {
		errs.warn(contourv1.ConditionTypeServiceError, status.ReasonHealthCheckPolicyInvalid, "%s: HealthPort is ignored: the %s has no healthCheckPolicy", where, scope)
	}
	if s.HealthPort != 0 && cs.HealthCheck != nil && s.HealthPort != s.Port {
		if s.HealthPort < 1 || s.HealthPort > 65535 {
			errs.add(contourv1.ConditionTypeServiceError, status.ReasonServicePortInvalid, "%s: service %q: healthPort must be in the range 1-65535", where, s.Name)
			return nil, false
		}
		cs.HealthPort = s.HealthPort
		if cs.HealthPorts, cs.DNSHealthPort, err = b.HealthPorts(be, s.HealthPort); err != nil {
			errs.add(contourv1.ConditionTypeServiceError, status.ReasonServiceUnresolvedReference, "%s: HealthPort of Service [%s:%d] is invalid: %v", where, s.Name, s.Port, err)
			return nil, false
		}
	}
	if len(be.Endpoints) == 0 && be.Service.Spec.ExternalName == "" {
		errs.st.AddWarning(contourv1.ConditionTypeServiceError, status.ReasonNoEndpoints, fmt.Sprintf("%s: Service %s/%s has no ready endpoints for port %d", errs.where, p.Namespace, s.Name, s.Port))
	}
	cs.Validation = uv
	c := b.ClusterFor("service", be, protocol, up, cs)
	b.Out.ClusterUses.Add(c.Name, ProxyRef(p.Namespace, p.Name))
	if uv != nil {
		b.Out.SecretUses.Add(uv.CASecret, ProxyRef(p.Namespace, p.Name))
	}
	return c, true
}
