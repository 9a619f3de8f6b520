package e2e

import (
	"net/http"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/e2e/harness"
)

// TestUnsupportedFieldKubernetes: an HTTPProxy with a field of the API
// that portcullis does not implement (a headers policy on a TCP proxy's
// service, which has no HTTP requests), created through the real API
// server, keeps the field there (the CRD does not prune it) and is
// refused: Valid False with SpecError/UnsupportedField naming the field,
// and not served (ignored, the host would be served otherwise than
// written). A valid sibling stays valid and served.
func TestUnsupportedFieldKubernetes(t *testing.T) {
	k := startKubeControlPlane(t, "--enable-external-name-services", "--allow-loopback-external-names")
	echo := harness.StartEcho(t, "echo")
	const ns = "fields"
	echoRoute := []contourv1.Route{{Services: []contourv1.Service{{Name: "echo", Port: 80}}}}
	tls := &contourv1.TLS{SecretName: "restricted-cert"}
	// A TCP proxy's service carries no HTTP requests to set headers on.
	tcpproxy := &contourv1.TCPProxy{Services: []contourv1.Service{{Name: "echo", Port: 80,
		RequestHeadersPolicy: &contourv1.HeadersPolicy{Set: []contourv1.HeaderValue{{Name: "x-a", Value: "b"}}}}}}
	k.apply(t, namespaces(ns)...)
	k.apply(t, harness.LoopbackExternalName(ns, "echo", 80, echo.Port)...)
	// The certificate and the Service exist: only the refused field is
	// wrong.
	ca := harness.NewCA(t, "fields")
	k.apply(t, ca.Issue(t, "restricted.example.com").Secret(ns, "restricted-cert"))
	k.apply(t,
		&contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "restricted"}, Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{Fqdn: "restricted.example.com", TLS: tls},
			TCPProxy:    tcpproxy,
			Routes:      echoRoute,
		}},
		&contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sibling"}, Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{Fqdn: "sibling.example.com"},
			Routes:      echoRoute,
		}},
	)

	t.Run("the API server keeps the field", func(t *testing.T) {
		p, err := k.proxy(ns, "restricted")
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Spec.TCPProxy; !reflect.DeepEqual(got, tcpproxy) {
			t.Errorf("tcpproxy read back = %+v, want %+v (pruned?)", got, tcpproxy)
		}
	})

	t.Run("UnsupportedField names the field; the host is not served", func(t *testing.T) {
		k.eventuallyProxy(t, ns, "restricted", want{status: metav1.ConditionFalse, reason: "UnsupportedField",
			errorTypes: []string{contourv1.ConditionTypeSpecError}, message: "spec.tcpproxy.services[0].requestHeadersPolicy: headers policies do not apply"})
		// Once the sibling is served, Envoy has the build that refused
		// the restricted host (statuses are written beside xDS updates).
		c := harness.HTTPClient(k.httpAddr)
		harness.EventuallyStatus(t, c, "http://sibling.example.com/", http.StatusOK)
		if code, err := harness.StatusCode(harness.HTTPSClient(ca.CertPEM, k.httpsAddr), "https://restricted.example.com/"); err == nil {
			t.Errorf("restricted.example.com: status %d over TLS, want no TLS host: a host with a refused field must not be served", code)
		}
	})

	t.Run("the sibling stays valid", func(t *testing.T) {
		k.eventuallyProxy(t, ns, "sibling", want{status: metav1.ConditionTrue, reason: "Valid", errorTypes: []string{}})
	})
}
