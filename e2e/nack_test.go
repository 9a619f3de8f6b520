package e2e

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/e2e/harness"
)

// TestEnvoyRejectionIsVisible sends Envoy a configuration it refuses but
// that passes both the CRD schema and our validation — a TLS certificate
// with a 1024-bit RSA key, which Go's TLS stack loads and Envoy refuses —
// and checks that the rejection reaches the HTTPProxy's status in the API
// server, that the other HTTPProxies keep working and stay valid, and that
// fixing the Secret clears the condition.
func TestEnvoyRejectionIsVisible(t *testing.T) {
	k := startKubeControlPlane(t, "--enable-external-name-services", "--allow-loopback-external-names")
	echo := harness.StartEcho(t, "echo")
	ca := harness.NewCA(t, "portcullis-nack")
	const ns = "nack"
	k.apply(t, namespaces(ns)...)
	k.apply(t, harness.LoopbackExternalName(ns, "echo", 80, echo.Port)...)
	k.apply(t,
		weakRSASecret(t, ns, "weak", "rejected.example.com"),
		&contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fine"}, Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{Fqdn: "fine.example.com"},
			Routes:      []contourv1.Route{{Services: []contourv1.Service{{Name: "echo", Port: 80}}}},
		}},
		&contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rejected"}, Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{Fqdn: "rejected.example.com", TLS: &contourv1.TLS{SecretName: "weak"}},
			Routes:      []contourv1.Route{{Services: []contourv1.Service{{Name: "echo", Port: 80}}}},
		}},
	)

	t.Run("the rejected HTTPProxy carries Envoy's error", func(t *testing.T) {
		k.eventuallyProxy(t, ns, "rejected", want{status: metav1.ConditionFalse, reason: "RejectedByEnvoy",
			errorTypes: []string{"EnvoyRejected"}, message: "only RSA certificates with 2048-bit or larger keys are supported"})
		if n := harness.MetricValue(t, "http://"+k.admin+"/metrics", `portcullis_xds_rejections_total{type="Secret"}`); n < 1 {
			t.Errorf("portcullis_xds_rejections_total{type=\"Secret\"} = %v, want at least 1", n)
		}
	})

	t.Run("the other HTTPProxies stay valid and served", func(t *testing.T) {
		k.eventuallyProxy(t, ns, "fine", want{status: metav1.ConditionTrue, reason: "Valid", errorTypes: []string{}})
		harness.EventuallyStatus(t, harness.HTTPClient(k.httpAddr), "http://fine.example.com/", http.StatusOK)
	})

	t.Run("fixing the object clears the condition", func(t *testing.T) {
		k.apply(t, ca.Issue(t, "rejected.example.com").Secret(ns, "weak"))
		k.eventuallyProxy(t, ns, "rejected", want{status: metav1.ConditionTrue, reason: "Valid"})
	})
}

// weakRSASecret is a kubernetes.io/tls Secret with a self-signed
// certificate on a 1024-bit RSA key: valid for Go, refused by Envoy.
func weakRSASecret(t *testing.T, namespace, name, host string) *corev1.Secret {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 1024) //nolint:gosec // deliberately weak: Envoy must refuse it
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: host}, DNSNames: []string{host},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kp := &harness.KeyPair{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}),
	}
	return kp.Secret(namespace, name)
}
