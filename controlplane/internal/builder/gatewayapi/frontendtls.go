package gatewayapi

import (
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// kindConfigMap names a ConfigMap in a CA certificate reference.
const kindConfigMap gwapiv1.Kind = "ConfigMap"

// frontendValidation reads the client certificate validation that the
// Gateway's spec.tls.frontend gives an HTTPS listener: its port's perPort
// entry, else the default. Clients must present a certificate that
// verifies against the CA certificates (AllowValidOnly); with
// AllowInsecureFallback one is requested and not required, and any is
// accepted. A bad reference is said in ResolvedRefs; without a valid CA
// the listener is not accepted (and not served: serving it without the
// validation would let every client in).
func (g *gatewayStage) frontendValidation(l *gwListener) {
	t := l.gw.gw.Spec.TLS
	if t == nil || t.Frontend == nil {
		return
	}
	cfg, where := t.Frontend.Default, "spec.tls.frontend.default"
	for i, p := range t.Frontend.PerPort {
		if p.Port == l.spec.Port {
			cfg, where = p.TLS, fmt.Sprintf("spec.tls.frontend.perPort[%d].tls", i)
		}
	}
	v := cfg.Validation
	if v == nil {
		return
	}
	gw := l.gw.gw
	var bundle []byte
	for i, ref := range v.CACertificateRefs {
		at := fmt.Sprintf("%s.validation.caCertificateRefs[%d]", where, i)
		key := core.NsName(string(orDefault(ref.Namespace, gwapiv1.Namespace(gw.Namespace))), string(ref.Name))
		if ca := g.frontendCA(l, at, ref.Group, ref.Kind, key); ca != nil {
			bundle = append(append(bundle, ca...), '\n')
		}
	}
	if bundle == nil {
		l.accepted.add(string(gwapiv1.ListenerReasonNoValidCACertificate), "%s.validation: no valid CA certificate to verify clients with", where)
		return
	}
	l.clientCA = &ir.Secret{Name: gw.Namespace + "/" + gw.Name + "/frontend-ca-" + strconv.Itoa(int(l.spec.Port)), CA: bundle}
	l.clientValidation = &ir.ClientValidation{CASecret: l.clientCA.Name}
	switch v.Mode {
	case "", gwapiv1.AllowValidOnly:
	case gwapiv1.AllowInsecureFallback:
		l.clientValidation.Optional, l.clientValidation.SkipVerification = true, true
	default:
		l.accepted.add(string(gwapiv1.ListenerReasonUnsupportedValue), "%s.validation.mode %q is neither AllowValidOnly nor AllowInsecureFallback", where, v.Mode)
	}
}

// frontendCA reads one CA certificate reference of a listener's client
// validation (a ConfigMap or a Secret, its ca.crt; another namespace's
// needs a ReferenceGrant there); nil, with the reason in the listener's
// ResolvedRefs, when it cannot be used.
func (g *gatewayStage) frontendCA(l *gwListener, at string, group gwapiv1.Group, kind gwapiv1.Kind, key types.NamespacedName) []byte {
	gw := l.gw.gw
	if group != "" || (kind != kindConfigMap && kind != kindSecret) {
		l.caRefs.add(string(gwapiv1.ListenerReasonInvalidCACertificateKind), "%s: kind %s of group %q is neither a ConfigMap nor a Secret", at, kind, group)
		return nil
	}
	if key.Namespace != gw.Namespace && !g.grants.permits(gatewayGroup, kindGateway, gw.Namespace, "", kind, key) {
		l.caRefs.add(string(gwapiv1.ListenerReasonRefNotPermitted), "%s: %s %s is in another namespace and no ReferenceGrant there allows Gateways of %s to use it", at, kind, key, gw.Namespace)
		return nil
	}
	var data []byte
	if kind == kindConfigMap {
		cm := g.configMaps[key]
		if cm == nil {
			l.caRefs.add(string(gwapiv1.ListenerReasonInvalidCACertificateRef), "%s: ConfigMap %s not found", at, key)
			return nil
		}
		data = []byte(cm.Data[core.CAKey])
	} else {
		s, err := g.R.CASecret(key.Name, key.Namespace)
		if err != nil {
			l.caRefs.add(string(gwapiv1.ListenerReasonInvalidCACertificateRef), "%s: %v", at, err)
			return nil
		}
		data = s.CA
	}
	if !core.ValidPEMCerts(data) {
		l.caRefs.add(string(gwapiv1.ListenerReasonInvalidCACertificateRef), "%s: %s %s has no valid PEM certificate under key %q", at, kind, key, core.CAKey)
		return nil
	}
	return data
}
