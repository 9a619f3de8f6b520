package gatewayapi

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// backendTLSIndex holds the BackendTLSPolicies, checked, and which one
// applies to each Service port they target: Envoy speaks TLS to that
// port, verifying the certificate as the policy says. A policy that
// cannot be honoured (no valid CA, options) still applies: its backends
// answer 500 rather than get plaintext or an unverified peer.
type backendTLSIndex struct {
	policies []*btlsPolicy
	// won holds, by target, the policy that wins it: the oldest of those
	// that target it (by creationTimestamp, then namespace and name).
	won map[btlsTarget]*btlsPolicy
	// all holds, by target, every policy that targets it, oldest first.
	all map[btlsTarget][]*btlsPolicy
}

// btlsTarget is a Service, or one of its ports by name (sectionName).
type btlsTarget struct {
	svc  types.NamespacedName
	port string
}

// btlsPolicy is one BackendTLSPolicy, checked.
type btlsPolicy struct {
	obj *gwapiv1.BackendTLSPolicy
	// validation is what Envoy checks of the backend's certificate, ca its
	// CA bundle; nil when invalid is not empty.
	validation *ir.UpstreamValidation
	ca         *ir.Secret
	// invalid makes the policy not Accepted (its backends answer 500);
	// refs are its bad caCertificateRefs (ResolvedRefs).
	invalid, refs findings
	// lost names the older policy that wins one of its targets.
	lost string
	// ancestors are the Gateways whose routes use a Service port it
	// applies to, in the order they were found.
	ancestors []gwapiv1.ParentReference
}

func (p *btlsPolicy) String() string { return p.obj.Namespace + "/" + p.obj.Name }

// newBackendTLSIndex checks the policies, reading their CA certificates
// from ConfigMaps and Secrets, and finds which wins each target.
func (g *gatewayStage) newBackendTLSIndex(policies []*gwapiv1.BackendTLSPolicy) backendTLSIndex {
	idx := backendTLSIndex{won: map[btlsTarget]*btlsPolicy{}, all: map[btlsTarget][]*btlsPolicy{}}
	for _, in := range policies {
		p := &btlsPolicy{obj: in}
		_, complaints := g.gatewayAPIStatus(objects.KindBackendTLSPolicy, in.Namespace, in.Name, in.Generation)
		p.invalid = decodeFindings(complaints)
		g.backendValidation(p)
		idx.policies = append(idx.policies, p)
	}
	// The oldest first: a newer policy cannot take over a target.
	order := slices.Clone(idx.policies)
	slices.SortStableFunc(order, func(a, b *btlsPolicy) int {
		if c := a.obj.CreationTimestamp.Compare(b.obj.CreationTimestamp.Time); c != 0 {
			return c
		}
		return cmp.Compare(a.String(), b.String())
	})
	for _, p := range order {
		for _, t := range p.obj.Spec.TargetRefs {
			// Other kinds are not backends Portcullis resolves (an
			// ExtensionService has its own TLS fields).
			if t.Group != "" || t.Kind != kindService {
				continue
			}
			key := btlsTarget{core.NsName(p.obj.Namespace, string(t.Name)), string(core.PtrValue(t.SectionName))}
			if !slices.Contains(idx.all[key], p) {
				idx.all[key] = append(idx.all[key], p)
			}
			if w, ok := idx.won[key]; ok && w != p {
				p.lost = w.String()
				continue
			}
			idx.won[key] = p
		}
	}
	return idx
}

// backendValidation reads p's validation: the CA certificates (or the
// system's trust roots), the hostname (the SNI, and the DNS SAN required
// unless subjectAltNames are given) and the SANs.
func (g *gatewayStage) backendValidation(p *btlsPolicy) {
	v := p.obj.Spec.Validation
	if len(p.obj.Spec.Options) > 0 {
		// Implementation-specific settings we do not know: honouring
		// the rest could be more open than asked.
		p.invalid.add(string(gwapiv1.PolicyReasonInvalid), "spec.options are not supported")
	}
	out := &ir.UpstreamValidation{SubjectName: string(v.Hostname)}
	for i, san := range v.SubjectAltNames {
		switch san.Type {
		case gwapiv1.HostnameSubjectAltNameType:
			out.SubjectNames = append(out.SubjectNames, string(san.Hostname))
		case gwapiv1.URISubjectAltNameType:
			out.SubjectURIs = append(out.SubjectURIs, string(san.URI))
		default:
			p.invalid.add(string(gwapiv1.PolicyReasonInvalid), "spec.validation.subjectAltNames[%d]: type %q is neither Hostname nor URI", i, san.Type)
		}
	}
	switch {
	case v.WellKnownCACertificates != nil && len(v.CACertificateRefs) > 0:
		p.invalid.add(string(gwapiv1.PolicyReasonInvalid), "spec.validation: give caCertificateRefs or wellKnownCACertificates, not both")
	case v.WellKnownCACertificates != nil:
		g.systemCA(p, out, *v.WellKnownCACertificates)
	case len(v.CACertificateRefs) == 0:
		p.invalid.add(string(gwapiv1.BackendTLSPolicyReasonNoValidCACertificate), "spec.validation needs caCertificateRefs or wellKnownCACertificates")
	default:
		g.policyCA(p, out)
	}
	if len(p.invalid) == 0 {
		p.validation = out
	}
}

// systemCA verifies against the control plane's system trust roots
// (wellKnownCACertificates: System).
func (g *gatewayStage) systemCA(p *btlsPolicy, out *ir.UpstreamValidation, which gwapiv1.WellKnownCACertificatesType) {
	if which != gwapiv1.WellKnownCACertificatesSystem {
		p.invalid.add(string(gwapiv1.PolicyReasonInvalid), "spec.validation.wellKnownCACertificates %q is not supported: only System", which)
		return
	}
	ca := g.R.Opts().SystemCA
	if len(ca) == 0 {
		p.invalid.add(string(gwapiv1.PolicyReasonInvalid), "spec.validation.wellKnownCACertificates: %v", core.ErrNoSystemCA)
		return
	}
	p.ca = &ir.Secret{Name: core.SystemCASecretName, CA: ca}
	out.CASecret = p.ca.Name
}

// policyCA gathers the CA certificates of caCertificateRefs (ConfigMaps or
// Secrets of the policy's namespace, their ca.crt) into one bundle. A bad
// reference is said in ResolvedRefs; without a good one the policy is
// not accepted.
func (g *gatewayStage) policyCA(p *btlsPolicy, out *ir.UpstreamValidation) {
	var bundle []byte
	for i, ref := range p.obj.Spec.Validation.CACertificateRefs {
		where := fmt.Sprintf("spec.validation.caCertificateRefs[%d]", i)
		key := core.NsName(p.obj.Namespace, string(ref.Name))
		var data []byte
		switch {
		case ref.Group == "" && ref.Kind == kindConfigMap:
			cm := g.configMaps[key]
			if cm == nil {
				p.refs.add(string(gwapiv1.BackendTLSPolicyReasonInvalidCACertificateRef), "%s: ConfigMap %s not found", where, key)
				continue
			}
			data = []byte(cm.Data[core.CAKey])
		case ref.Group == "" && ref.Kind == kindSecret:
			s, err := g.R.CASecret(key.Name, key.Namespace)
			if err != nil {
				p.refs.add(string(gwapiv1.BackendTLSPolicyReasonInvalidCACertificateRef), "%s: %v", where, err)
				continue
			}
			data = s.CA
		default:
			p.refs.add(string(gwapiv1.BackendTLSPolicyReasonInvalidKind), "%s: kind %s of group %q is neither a ConfigMap nor a Secret", where, ref.Kind, ref.Group)
			continue
		}
		if !core.ValidPEMCerts(data) {
			p.refs.add(string(gwapiv1.BackendTLSPolicyReasonInvalidCACertificateRef), "%s: %s %s has no valid PEM certificate under key %q", where, ref.Kind, key, core.CAKey)
			continue
		}
		bundle = append(append(bundle, data...), '\n')
	}
	if bundle == nil {
		p.invalid.add(string(gwapiv1.BackendTLSPolicyReasonNoValidCACertificate), "no valid CA certificate: %s", p.refs.message())
		return
	}
	// Named after the policy: namespace/name/key names a Secret's CA, and
	// a Secret cannot be named with a slash.
	p.ca = &ir.Secret{Name: p.obj.Namespace + "/" + p.obj.Name + "/backendtlspolicy", CA: bundle}
	out.CASecret = p.ca.Name
}

// forPort is the policy that applies to the port named port of the
// Service svc: the one that wins that port, else the one that wins the
// whole Service; nil for none.
func (idx backendTLSIndex) forPort(svc types.NamespacedName, port string) *btlsPolicy {
	if p, ok := idx.won[btlsTarget{svc, port}]; ok && port != "" {
		return p
	}
	return idx.won[btlsTarget{svc, ""}]
}

// targeting are the policies that target the port named port of the
// Service svc, or the whole Service: those that apply to it and those
// that lost it to an older one.
func (idx backendTLSIndex) targeting(svc types.NamespacedName, port string) []*btlsPolicy {
	out := idx.all[btlsTarget{svc, ""}]
	if port != "" {
		out = append(slices.Clip(out), idx.all[btlsTarget{svc, port}]...)
	}
	return out
}

// key encodes what the policies make of their backends, so that the
// routes' rules kept between builds (memo.go) are built again when a
// policy's CA changes.
func (idx backendTLSIndex) key() string {
	targets := make([]string, 0, len(idx.won))
	for t, p := range idx.won {
		k := fmt.Sprintf("%v=%s:%v:%q", t, p, core.PtrValue(p.validation), p.invalid.message())
		if p.ca != nil {
			k += string(p.ca.CA)
		}
		targets = append(targets, k)
	}
	slices.Sort(targets)
	return strings.Join(targets, ";")
}
