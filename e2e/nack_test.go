package e2e

import (
	"fmt"
	"net/http"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/e2e/harness"
)

// TestEnvoyRejectionIsVisible sends Envoy a configuration it refuses but
// that passes both the CRD schema and our validation — a TLS upstream whose
// subjectName (and so SNI) holds a NUL byte — and checks that the rejection
// reaches the HTTPProxy's status in the API server, that the other
// HTTPProxies keep working and stay valid, and that fixing the object
// clears the condition.
func TestEnvoyRejectionIsVisible(t *testing.T) {
	k := startKubeControlPlane(t, "--enable-external-name-services", "--allow-loopback-external-names")
	echo := harness.StartEcho(t, "echo")
	ca := harness.NewCA(t, "portcullis-nack")
	const ns = "nack"
	tls := "tls"
	rejected := func(subject string) *contourv1.HTTPProxy {
		return &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rejected"}, Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{Fqdn: "rejected.example.com"},
			Routes: []contourv1.Route{{Services: []contourv1.Service{{Name: "backend", Port: 443, Protocol: &tls,
				UpstreamValidation: &contourv1.UpstreamValidation{CACertificate: "backend-ca", SubjectName: subject}}}}},
		}}
	}
	k.apply(t, namespaces(ns)...)
	k.apply(t, loopbackExternalName(ns, "echo", 80, echo.Port)...)
	k.apply(t,
		ca.Secret(ns, "backend-ca"),
		clusterIPService(ns, "backend", "https", 443), endpointSlice(ns, "backend", "https", 8443, 1, "10.20.0.1"),
		&contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fine"}, Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{Fqdn: "fine.example.com"},
			Routes:      []contourv1.Route{{Services: []contourv1.Service{{Name: "echo", Port: 80}}}},
		}},
		rejected("backend\x00.example.com"),
	)

	t.Run("the rejected HTTPProxy carries Envoy's error", func(t *testing.T) {
		k.eventuallyProxy(t, ns, "rejected", want{status: metav1.ConditionFalse, reason: "RejectedByEnvoy",
			errorTypes: []string{"EnvoyRejected"}, message: "SNI names containing NULL-byte are not allowed"})
		if n := metricValue(t, "http://"+k.admin+"/metrics", `portcullis_xds_rejections_total{type="Cluster"}`); n < 1 {
			t.Errorf("portcullis_xds_rejections_total{type=\"Cluster\"} = %v, want at least 1", n)
		}
	})

	t.Run("the other HTTPProxies stay valid and served", func(t *testing.T) {
		k.eventuallyProxy(t, ns, "fine", want{status: metav1.ConditionTrue, reason: "Valid", errorTypes: []string{}})
		harness.Eventually(t, statusTimeout, func() error {
			code, err := statusCode(harness.HTTPClient(k.httpAddr), "http://fine.example.com/")
			if err != nil {
				return err
			}
			if code != http.StatusOK {
				return fmt.Errorf("fine.example.com: status %d, want 200", code)
			}
			return nil
		})
	})

	t.Run("fixing the object clears the condition", func(t *testing.T) {
		k.apply(t, rejected("backend.example.com"))
		k.eventuallyProxy(t, ns, "rejected", want{status: metav1.ConditionTrue, reason: "Valid"})
	})
}
