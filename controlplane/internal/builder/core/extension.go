package core

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/apis/projectcontour/v1alpha1"
	"github.com/portcullis/portcullis/controlplane/internal/apicheck"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// Extension is a validated ExtensionService.
type Extension struct {
	status *status.Object
	// cluster is nil when the ExtensionService is invalid.
	Cluster   *ir.Cluster
	Authority string
	// timeout is spec.timeoutPolicy.response, the default for checks.
	Timeout *time.Duration
}

// ExtensionClusterName is the Envoy cluster of an ExtensionService.
func ExtensionClusterName(namespace, name string) string {
	return "extension/" + namespace + "/" + name
}

// condSpec is the condition type of ExtensionService spec findings.
const condSpec = contourv1.ConditionTypeSpecError

// buildExtension validates one ExtensionService into its cluster (nil
// when it is invalid).
func (b Stage) buildExtension(es *v1alpha1.ExtensionService) *Extension {
	st := b.specStatus(KindExtensionService, es, &es.Spec)
	name := ExtensionClusterName(es.Namespace, es.Name)
	ext := &Extension{status: st, Authority: es.Name + "." + es.Namespace}
	spec := es.Spec

	if v := spec.ProtocolVersion; v != "" && v != v1alpha1.SupportProtocolVersion3 {
		st.AddError(condSpec, status.ReasonUnsupportedProtocol, fmt.Sprintf("spec.protocolVersion %q is not supported: only %q", v, v1alpha1.SupportProtocolVersion3))
	}
	protocol := extensionProtocol(spec, st)
	var validation *ir.UpstreamValidation
	if v := spec.UpstreamValidation; v != nil {
		var err error
		validation, err = b.UpstreamValidation(v, es.Namespace)
		switch {
		case IsNotDelegated(err):
			st.AddError(contourv1.ConditionTypeTLSError, status.ReasonCACertificateNotDelegated, "spec.validation.caSecret: "+err.Error())
		case err != nil:
			st.AddError(condSpec, status.ReasonTLSUpstreamValidation, "spec.validation: "+err.Error())
		default:
			ext.Authority = v.SubjectName
		}
	}
	lb := extensionLoadBalancer(spec.LoadBalancerPolicy, st)
	var idle *time.Duration
	ext.Timeout, idle = extensionTimeouts(spec.TimeoutPolicy, st)
	hc, err := healthCheck(spec.HealthCheckPolicy)
	if err != nil {
		st.AddError(condSpec, status.ReasonHealthCheckPolicyInvalid, "spec.healthCheckPolicy: "+err.Error())
	}
	backends, weights, eps := b.extensionBackends(es, st)
	if !st.Valid() {
		return ext
	}
	// Readiness is the Ready condition's business, not Valid's: a valid
	// ExtensionService without endpoints is still configured in Envoy.
	eps.HealthChecked = hc != nil
	st.Endpoints = eps
	c := newCluster(name, backends, weights, protocol, validation, lb, idle)
	c.CircuitBreakers = circuitBreakers(spec.CircuitBreakerPolicy)
	ext.Cluster = b.Out.AddCluster(c)
	self := objects.Ref{Kind: KindExtensionService, Namespace: es.Namespace, Name: es.Name}
	b.Out.ClusterUses.Add(name, self)
	if validation != nil {
		b.Out.SecretUses.Add(validation.CASecret, self)
	}
	ext.Cluster.HealthCheck = hc
	if hc != nil && hc.Authority == "" {
		hc.Authority = ext.Authority
	}
	st.ClusterName = name
	return ext
}

// extensionProtocol is the protocol to an ExtensionService: h2 is HTTP/2
// over TLS, h2c plaintext HTTP/2; unset means TLS when a validation is
// given, plaintext otherwise.
func extensionProtocol(spec v1alpha1.ExtensionServiceSpec, st *status.Object) ir.Protocol {
	protocol := ir.H2C
	if spec.UpstreamValidation != nil {
		protocol = ir.H2
	}
	if p := spec.Protocol; p != nil {
		switch *p {
		case "h2":
			protocol = ir.H2
		case "h2c":
			protocol = ir.H2C
			if spec.UpstreamValidation != nil {
				st.AddError(condSpec, status.ReasonInconsistentProtocol, "spec.validation requires TLS, but spec.protocol is h2c (plaintext): use h2 or remove spec.validation")
			}
		default:
			st.AddError(condSpec, status.ReasonUnsupportedProtocol, fmt.Sprintf("spec.protocol %q is not supported: use h2 (TLS) or h2c (plaintext)", *p))
		}
	}
	if protocol == ir.H2 && spec.UpstreamValidation == nil {
		st.AddWarning(condSpec, status.ReasonTLSWithoutValidation, "spec.protocol is h2 (TLS) but spec.validation is not set: the server's certificate is not verified")
	}
	return protocol
}

// extensionLoadBalancer validates spec.loadBalancerPolicy. Cookie and
// RequestHash hash a route's requests, and the filters that call an
// ExtensionService have no route: as Contour, they are accepted with a
// warning that they have no effect (IgnoredField), and RoundRobin is used;
// which endpoint answers never widens access (docs/design/decisions.md,
// harmless fields). So are requestHashPolicies with another strategy.
func extensionLoadBalancer(p *contourv1.LoadBalancerPolicy, st *status.Object) string {
	if p == nil {
		return ""
	}
	switch p.Strategy {
	case "", "RoundRobin", "WeightedLeastRequest", "Random":
		if len(p.RequestHashPolicies) > 0 {
			st.AddWarning(condSpec, status.ReasonIgnoredField, "spec.loadBalancerPolicy.requestHashPolicies have no effect on an ExtensionService: Envoy hashes a route's requests, and the filters that call it have no route")
		}
		return p.Strategy
	case "Cookie", "RequestHash":
		st.AddWarning(condSpec, status.ReasonIgnoredField, fmt.Sprintf("spec.loadBalancerPolicy.strategy %s has no effect on an ExtensionService (Envoy hashes a route's requests, and the filters that call it have no route): RoundRobin is used", p.Strategy))
		return ""
	}
	st.AddError(condSpec, status.ReasonInvalidLoadBalancerPolicy, fmt.Sprintf("spec.loadBalancerPolicy.strategy %q is not supported for an ExtensionService: use RoundRobin, WeightedLeastRequest or Random", p.Strategy))
	return ""
}

// extensionTimeouts validates spec.timeoutPolicy: the response timeout is
// the default for checks, the idle timeout the cluster's.
func extensionTimeouts(tp *contourv1.TimeoutPolicy, st *status.Object) (response, idle *time.Duration) {
	if tp == nil {
		return nil, nil
	}
	response, err := apicheck.ParseTimeout(tp.Response)
	if err != nil {
		st.AddError(condSpec, status.ReasonTimeoutPolicyNotValid, "spec.timeoutPolicy.response: "+err.Error())
	}
	idle, err = apicheck.ParseTimeout(tp.Idle)
	if err != nil {
		st.AddError(condSpec, status.ReasonTimeoutPolicyNotValid, "spec.timeoutPolicy.idle: "+err.Error())
	}
	// idleConnection is Contour's name for the cluster's idle timeout,
	// which idle already sets here (an ExtensionService has no route
	// whose stream idle timeout idle could be): both name one Envoy
	// setting, so they must agree.
	idleConn, err := apicheck.ParseTimeout(tp.IdleConnection)
	if err != nil {
		st.AddError(condSpec, status.ReasonTimeoutPolicyNotValid, "spec.timeoutPolicy.idleConnection: "+err.Error())
		return response, idle
	}
	if idleConn != nil {
		if idle != nil && *idle != *idleConn {
			st.AddError(condSpec, status.ReasonTimeoutPolicyNotValid, fmt.Sprintf("spec.timeoutPolicy.idle (%s) and idleConnection (%s) both set the idle timeout of the connections to the ExtensionService: give one, or the same", tp.Idle, tp.IdleConnection))
		}
		idle = idleConn
	}
	return response, idle
}

// extensionBackends resolves spec.services, with their weights and the
// count of their endpoints.
func (b Stage) extensionBackends(es *v1alpha1.ExtensionService, st *status.Object) ([]*Backend, []uint32, *status.Endpoints) {
	var backends []*Backend
	var weights []uint32
	eps := &status.Endpoints{}
	for i, t := range es.Spec.Services {
		be, err := b.R.Backend(NsName(es.Namespace, t.Name), t.Port)
		if err != nil {
			st.AddError(contourv1.ConditionTypeServiceError, status.ReasonServiceUnresolvedReference, fmt.Sprintf("spec.services[%d]: %s", i, err))
			continue
		}
		externalName := be.Service.Spec.Type == corev1.ServiceTypeExternalName
		if externalName && len(es.Spec.Services) > 1 {
			st.AddError(contourv1.ConditionTypeServiceError, status.ReasonInvalidExternalName, fmt.Sprintf("spec.services[%d]: ExternalName Service %q must be the only service of an ExtensionService", i, t.Name))
			continue
		}
		if externalName {
			eps.ExternalName = be.Service.Spec.ExternalName
		}
		eps.Ready += len(be.Endpoints)
		eps.Total += be.total
		backends = append(backends, be)
		weights = append(weights, t.Weight)
	}
	if len(es.Spec.Services) == 0 {
		st.AddError(contourv1.ConditionTypeServiceError, status.ReasonServiceUnresolvedReference, "spec.services must name at least one Service")
	}
	return backends, weights, eps
}

// Defaults of spec.healthCheckPolicy.
const (
	defaultHealthInterval  = 5 * time.Second
	defaultHealthTimeout   = 2 * time.Second
	defaultUnhealthyChecks = 3
	defaultHealthyChecks   = 2
)

// healthCheck validates spec.healthCheckPolicy and applies its defaults;
// nil when health checking is off.
func healthCheck(p *v1alpha1.GRPCHealthCheckPolicy) (*ir.HealthCheck, error) {
	if p == nil {
		return nil, nil
	}
	hc, err := healthTiming(p.IntervalSeconds, p.TimeoutSeconds)
	if err != nil {
		return nil, err
	}
	setHealthThresholds(hc, p.UnhealthyThresholdCount, p.HealthyThresholdCount)
	hc.ServiceName = p.ServiceName
	if hc.Timeout > hc.Interval {
		return nil, fmt.Errorf("timeoutSeconds (%v) must not exceed intervalSeconds (%v)", hc.Timeout, hc.Interval)
	}
	return hc, nil
}

// UpstreamValidation resolves a CA Secret (in the namespace of the object
// that names it) into an SDS validation secret.
func (b Stage) UpstreamValidation(v *contourv1.UpstreamValidation, namespace string) (*ir.UpstreamValidation, error) {
	if v.SubjectName == "" {
		return nil, fmt.Errorf("subjectName is required")
	}
	// It is also the SNI (at most 255 bytes in Envoy) and an
	// ExtensionService's gRPC authority.
	if len(v.SubjectName) > 255 {
		return nil, fmt.Errorf("subjectName is longer than 255 bytes")
	}
	if err := NoControlBytes(v.SubjectName); err != nil {
		return nil, fmt.Errorf("subjectName %w", err)
	}
	names, err := subjectNames(v)
	if err != nil {
		return nil, err
	}
	name, err := b.caSecret(v.CACertificate, namespace)
	if err != nil {
		return nil, err
	}
	return &ir.UpstreamValidation{CASecret: name, SubjectName: v.SubjectName, SubjectNames: names}, nil
}

// maxSubjectNames is the API's limit, checked again for objects that did
// not pass through the API server's schema (files).
const maxSubjectNames = 8

// subjectNames are the names a certificate may present, as Contour reads
// them: subjectName alone, or subjectNames whose first entry is
// subjectName (the deprecated field and its replacement must agree). Nil
// when subjectName is the only one: the model (and the cluster names
// hashed from it) stays that of subjectName alone.
func subjectNames(v *contourv1.UpstreamValidation) ([]string, error) {
	if len(v.SubjectNames) == 0 {
		return nil, nil
	}
	if v.SubjectNames[0] != v.SubjectName {
		return nil, fmt.Errorf("subjectNames[0] (%q) must equal subjectName (%q)", v.SubjectNames[0], v.SubjectName)
	}
	if len(v.SubjectNames) > maxSubjectNames {
		return nil, fmt.Errorf("subjectNames has %d entries, at most %d are allowed", len(v.SubjectNames), maxSubjectNames)
	}
	seen := map[string]bool{}
	for i, n := range v.SubjectNames {
		if n == "" {
			return nil, fmt.Errorf("subjectNames[%d] is empty", i)
		}
		if len(n) > 255 {
			return nil, fmt.Errorf("subjectNames[%d] is longer than 255 bytes", i)
		}
		if err := NoControlBytes(n); err != nil {
			return nil, fmt.Errorf("subjectNames[%d] %w", i, err)
		}
		if seen[n] {
			return nil, fmt.Errorf("subjectNames[%d] (%q) is listed twice", i, n)
		}
		seen[n] = true
	}
	if len(v.SubjectNames) == 1 {
		return nil, nil
	}
	return append([]string(nil), v.SubjectNames...), nil
}
