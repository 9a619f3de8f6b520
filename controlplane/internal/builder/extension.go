package builder

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/apis/projectcontour/v1alpha1"
	"github.com/portcullis/portcullis/controlplane/internal/config"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// extension is a validated ExtensionService.
type extension struct {
	status *status.Object
	// cluster is nil when the ExtensionService is invalid.
	cluster   *ir.Cluster
	authority string
	// timeout is spec.timeoutPolicy.response, the default for checks.
	timeout *time.Duration
}

// ExtensionClusterName is the Envoy cluster of an ExtensionService.
func ExtensionClusterName(namespace, name string) string {
	return "extension/" + namespace + "/" + name
}

// Reasons of ExtensionService errors.
const (
	// Condition types of ExtensionService findings.
	condSpec = contourv1.ConditionTypeSpecError
)

func (b stage) buildExtension(es *v1alpha1.ExtensionService) *extension {
	st := b.specStatus(KindExtensionService, es, es.Spec)
	name := ExtensionClusterName(es.Namespace, es.Name)
	ext := &extension{status: st, authority: es.Name + "." + es.Namespace}
	spec := es.Spec

	if v := spec.ProtocolVersion; v != "" && v != v1alpha1.SupportProtocolVersion3 {
		st.AddError(condSpec, status.ReasonUnsupportedProtocol, fmt.Sprintf("spec.protocolVersion %q is not supported: only %q", v, v1alpha1.SupportProtocolVersion3))
	}

	// Protocol: h2 is HTTP/2 over TLS, h2c is plaintext HTTP/2. Unset means
	// TLS when a validation is given, plaintext otherwise.
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
				st.AddError(condSpec, status.ReasonUnsupportedProtocol, "spec.validation requires TLS, but spec.protocol is h2c (plaintext): use h2 or remove spec.validation")
			}
		default:
			st.AddError(condSpec, status.ReasonUnsupportedProtocol, fmt.Sprintf("spec.protocol %q is not supported: use h2 (TLS) or h2c (plaintext)", *p))
		}
	}
	if protocol == ir.H2 && spec.UpstreamValidation == nil {
		st.AddWarning(condSpec, status.ReasonTLSWithoutValidation, "spec.protocol is h2 (TLS) but spec.validation is not set: the server's certificate is not verified")
	}

	var validation *ir.UpstreamValidation
	if v := spec.UpstreamValidation; v != nil {
		var err error
		validation, err = b.upstreamValidation(v, es.Namespace)
		if err != nil {
			st.AddError(condSpec, status.ReasonUpstreamValidationInvalid, "spec.validation: "+err.Error())
		} else {
			ext.authority = v.SubjectName
		}
	}

	lb := ""
	if p := spec.LoadBalancerPolicy; p != nil {
		switch p.Strategy {
		case "", "RoundRobin", "WeightedLeastRequest", "Random":
			lb = p.Strategy
		default:
			st.AddError(condSpec, status.ReasonInvalidLoadBalancerPolicy, fmt.Sprintf("spec.loadBalancerPolicy.strategy %q is not supported for an ExtensionService: use RoundRobin, WeightedLeastRequest or Random", p.Strategy))
		}
	}

	var idle *time.Duration
	if tp := spec.TimeoutPolicy; tp != nil {
		if d, err := config.ParseTimeout(tp.Response); err != nil {
			st.AddError(condSpec, status.ReasonInvalidTimeout, "spec.timeoutPolicy.response: "+err.Error())
		} else {
			ext.timeout = d
		}
		if d, err := config.ParseTimeout(tp.Idle); err != nil {
			st.AddError(condSpec, status.ReasonInvalidTimeout, "spec.timeoutPolicy.idle: "+err.Error())
		} else {
			idle = d
		}
	}

	hc, err := healthCheck(spec.HealthCheckPolicy)
	if err != nil {
		st.AddError(condSpec, status.ReasonInvalidHealthCheckPolicy, "spec.healthCheckPolicy: "+err.Error())
	}

	var backends []*backend
	var weights []uint32
	eps := &status.Endpoints{HealthChecked: hc != nil}
	for i, t := range spec.Services {
		be, err := b.r.backend(nn(es.Namespace, t.Name), t.Port)
		if err != nil {
			st.AddError(contourv1.ConditionTypeServiceError, status.ReasonServiceUnresolvedReference, fmt.Sprintf("spec.services[%d]: %s", i, err))
			continue
		}
		if be.service.Spec.Type == corev1.ServiceTypeExternalName && len(spec.Services) > 1 {
			st.AddError(contourv1.ConditionTypeServiceError, status.ReasonInvalidExternalName, fmt.Sprintf("spec.services[%d]: ExternalName Service %q must be the only service of an ExtensionService", i, t.Name))
			continue
		}
		if be.service.Spec.Type == corev1.ServiceTypeExternalName {
			eps.ExternalName = be.service.Spec.ExternalName
		}
		eps.Ready += len(be.endpoints)
		eps.Total += be.total
		backends = append(backends, be)
		weights = append(weights, t.Weight)
	}
	if len(spec.Services) == 0 {
		st.AddError(contourv1.ConditionTypeServiceError, status.ReasonServiceUnresolvedReference, "spec.services must name at least one Service")
	}
	if !st.Valid() {
		return ext
	}
	// Readiness is the Ready condition's business, not Valid's: a valid
	// ExtensionService without endpoints is still configured in Envoy.
	st.Endpoints = eps
	ext.cluster = b.out.addCluster(newCluster(name, backends, weights, protocol, validation, lb, idle))
	self := objects.Ref{Kind: KindExtensionService, Namespace: es.Namespace, Name: es.Name}
	b.out.sources.clusters.add(name, self)
	if validation != nil {
		b.out.sources.secrets.add(validation.CASecret, self)
	}
	ext.cluster.HealthCheck = hc
	if hc != nil && hc.Authority == "" {
		hc.Authority = ext.authority
	}
	st.ClusterName = name
	return ext
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
	if p.IntervalSeconds < 0 || p.TimeoutSeconds < 0 {
		return nil, fmt.Errorf("intervalSeconds and timeoutSeconds must be positive")
	}
	hc := &ir.HealthCheck{
		ServiceName: p.ServiceName,
		Interval:    defaultHealthInterval, Timeout: defaultHealthTimeout,
		UnhealthyThreshold: defaultUnhealthyChecks, HealthyThreshold: defaultHealthyChecks,
	}
	if p.IntervalSeconds > 0 {
		hc.Interval = time.Duration(p.IntervalSeconds) * time.Second
	}
	if p.TimeoutSeconds > 0 {
		hc.Timeout = time.Duration(p.TimeoutSeconds) * time.Second
	}
	if p.UnhealthyThresholdCount > 0 {
		hc.UnhealthyThreshold = p.UnhealthyThresholdCount
	}
	if p.HealthyThresholdCount > 0 {
		hc.HealthyThreshold = p.HealthyThresholdCount
	}
	if hc.Timeout > hc.Interval {
		return nil, fmt.Errorf("timeoutSeconds (%v) must not exceed intervalSeconds (%v)", hc.Timeout, hc.Interval)
	}
	return hc, nil
}

// upstreamValidation resolves a CA Secret (in the namespace of the object
// that names it) into an SDS validation secret.
func (b stage) upstreamValidation(v *contourv1.UpstreamValidation, namespace string) (*ir.UpstreamValidation, error) {
	if v.SubjectName == "" {
		return nil, fmt.Errorf("subjectName is required")
	}
	// It is also the SNI (at most 255 bytes in Envoy) and an
	// ExtensionService's gRPC authority.
	if len(v.SubjectName) > 255 {
		return nil, fmt.Errorf("subjectName is longer than 255 bytes")
	}
	if err := noControlBytes(v.SubjectName); err != nil {
		return nil, fmt.Errorf("subjectName %w", err)
	}
	name, err := b.caSecret(v.CACertificate, namespace)
	if err != nil {
		return nil, err
	}
	return &ir.UpstreamValidation{CASecret: name, SubjectName: v.SubjectName}, nil
}
