package builder

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// gwTLSSet is a Gateway (web/gw) with an HTTPS listener on 9443, its
// certificate Secret srv, a CA ConfigMap ca and a CA-less ConfigMap
// empty, a Secret ca of namespace other, and tls as its spec.tls.
func gwTLSSet(t *testing.T, tls *gwapiv1.GatewayTLSConfig) *objects.Set {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gw"}, DNSNames: []string{"gw.example.com"}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	ca := string(testCAPEM(t))
	gw := &gwapiv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "gw"}, Spec: gwapiv1.GatewaySpec{
		GatewayClassName: "portcullis", TLS: tls,
		Listeners: []gwapiv1.Listener{{Name: "https", Port: 9443, Protocol: gwapiv1.HTTPSProtocolType,
			TLS: &gwapiv1.ListenerTLSConfig{CertificateRefs: []gwapiv1.SecretObjectReference{{Name: "srv"}}}}},
	}}
	set := &objects.Set{
		GatewayClasses: []*gwapiv1.GatewayClass{{ObjectMeta: metav1.ObjectMeta{Name: "portcullis"}, Spec: gwapiv1.GatewayClassSpec{ControllerName: "portcullis.dev/gateway-controller"}}},
		Gateways:       []*gwapiv1.Gateway{gw},
		Secrets: []*corev1.Secret{
			{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "srv"}, Data: map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM}},
			{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "ca"}, Data: map[string][]byte{"ca.crt": []byte(ca)}},
		},
		ConfigMaps: []*corev1.ConfigMap{
			{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "ca"}, Data: map[string]string{"ca.crt": ca}},
			{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "empty"}},
		},
	}
	set.Sort()
	return set
}

// A Gateway's spec.tls: the frontend validation of its HTTPS listeners
// (served with the CA, or not served without a valid one, the reference
// said in ResolvedRefs), and its backend client certificate (the
// Gateway's ResolvedRefs). Nothing else of the Gateway is affected.
func TestGatewayTLS(t *testing.T) {
	frontend := func(mode gwapiv1.FrontendValidationModeType, refs ...gwapiv1.ObjectReference) *gwapiv1.GatewayTLSConfig {
		return &gwapiv1.GatewayTLSConfig{Frontend: &gwapiv1.FrontendTLSConfig{Default: gwapiv1.TLSConfig{
			Validation: &gwapiv1.FrontendTLSValidation{Mode: mode, CACertificateRefs: refs}}}}
	}
	cm := func(name string) gwapiv1.ObjectReference {
		return gwapiv1.ObjectReference{Kind: "ConfigMap", Name: gwapiv1.ObjectName(name)}
	}
	other := gwapiv1.ObjectReference{Kind: "Secret", Name: "ca", Namespace: core.PtrTo(gwapiv1.Namespace("other"))}
	backend := func(ref gwapiv1.SecretObjectReference) *gwapiv1.GatewayTLSConfig {
		return &gwapiv1.GatewayTLSConfig{Backend: &gwapiv1.GatewayBackendTLS{ClientCertificateRef: &ref}}
	}
	for _, tc := range []struct {
		name string
		tls  *gwapiv1.GatewayTLSConfig
		// served is the listener's client validation ("-": not served,
		// "none": served without).
		served string
		// accepted and refs are the listener's Accepted and ResolvedRefs
		// reasons; gwRefs the Gateway's ResolvedRefs reason ("" for none).
		accepted, refs, gwRefs string
	}{
		{"none", nil, "none", "Accepted", "ResolvedRefs", ""},
		{"a ConfigMap's CA", frontend("", cm("ca")), "required", "Accepted", "ResolvedRefs", ""},
		{"insecure fallback", frontend(gwapiv1.AllowInsecureFallback, cm("ca")), "optional unverified", "Accepted", "ResolvedRefs", ""},
		{"one bad reference of two", frontend("", cm("missing"), cm("ca")), "required", "Accepted", "InvalidCACertificateRef", ""},
		{"a missing ConfigMap", frontend("", cm("missing")), "-", "NoValidCACertificate", "InvalidCACertificateRef", ""},
		{"a ConfigMap without ca.crt", frontend("", cm("empty")), "-", "NoValidCACertificate", "InvalidCACertificateRef", ""},
		{"a wrong kind", frontend("", gwapiv1.ObjectReference{Kind: "Service", Name: "ca"}), "-", "NoValidCACertificate", "InvalidCACertificateKind", ""},
		{"another namespace without a grant", frontend("", other), "-", "NoValidCACertificate", "RefNotPermitted", ""},
		{"a backend client certificate", backend(gwapiv1.SecretObjectReference{Name: "srv"}), "none", "Accepted", "ResolvedRefs", "ResolvedRefs"},
		{"a missing backend client certificate", backend(gwapiv1.SecretObjectReference{Name: "nope"}), "none", "Accepted", "ResolvedRefs", "InvalidClientCertificateRef"},
		{"a backend client certificate of a wrong kind", backend(gwapiv1.SecretObjectReference{Kind: core.PtrTo(gwapiv1.Kind("ConfigMap")), Name: "ca"}), "none", "Accepted", "ResolvedRefs", "InvalidClientCertificateRef"},
		{"another namespace's client certificate", backend(gwapiv1.SecretObjectReference{Name: "ca", Namespace: core.PtrTo(gwapiv1.Namespace("other"))}), "none", "Accepted", "ResolvedRefs", "RefNotPermitted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := Build(gwTLSSet(t, tc.tls), core.Options{HTTP: core.Bind{Port: 8080}})
			served := "-"
			if l := res.Model.Listener("https-9443"); l != nil && len(l.Secure) > 0 {
				served = "none"
				if cv := l.Secure[0].ClientValidation; cv != nil {
					served = "required"
					if cv.Optional && cv.SkipVerification {
						served = "optional unverified"
					}
				}
			}
			if served != tc.served {
				t.Errorf("served %q, want %q", served, tc.served)
			}
			var st *status.GatewayAPI
			for _, o := range res.Status {
				if o.Ref == (objects.Ref{Kind: objects.KindGateway, Namespace: "web", Name: "gw"}) {
					st = o.GatewayAPI
				}
			}
			if st == nil || len(st.Listeners) != 1 {
				t.Fatalf("listeners %+v", st.Listeners)
			}
			for typ, want := range map[gwapiv1.ListenerConditionType]string{gwapiv1.ListenerConditionAccepted: tc.accepted, gwapiv1.ListenerConditionResolvedRefs: tc.refs} {
				if c := meta.FindStatusCondition(st.Listeners[0].Conditions, string(typ)); c == nil || c.Reason != want {
					t.Errorf("listener %s %+v, want reason %s", typ, c, want)
				}
			}
			c := meta.FindStatusCondition(st.Conditions, string(gwapiv1.GatewayConditionResolvedRefs))
			switch {
			case tc.gwRefs == "" && c != nil:
				t.Errorf("Gateway ResolvedRefs %+v, want none", c)
			case tc.gwRefs != "" && (c == nil || c.Reason != tc.gwRefs):
				t.Errorf("Gateway ResolvedRefs %+v, want reason %s", c, tc.gwRefs)
			}
			// Its one listener not served, the Gateway is not accepted;
			// a backend client certificate never stops it.
			if a := meta.FindStatusCondition(st.Conditions, string(gwapiv1.GatewayConditionAccepted)); a == nil || (a.Status == metav1.ConditionTrue) != (tc.served != "-") {
				t.Errorf("Gateway Accepted %+v with the listener served %q", a, tc.served)
			}
		})
	}
}
