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
// that portcullis does not implement (a certificate revocation list),
// created through the real API server, keeps the field there (the CRD does
// not prune it) and is refused: Valid False with SpecError/UnsupportedField
// naming the field, and not served (ignored, revoked client certificates
// would be let in). A valid sibling stays valid and served.
func TestUnsupportedFieldKubernetes(t *testing.T) {
	k := startKubeControlPlane(t, "--enable-external-name-services", "--allow-loopback-external-names")
	echo := harness.StartEcho(t, "echo")
	const ns = "fields"
	echoRoute := []contourv1.Route{{Services: []contourv1.Service{{Name: "echo", Port: 80}}}}
	tls := &contourv1.TLS{SecretName: "restricted-cert"}
	// An exact path on an include stays refused (an include's conditions
	// match a prefix of its routes').
	includes := []contourv1.Include{{Name: "child", Conditions: []contourv1.MatchCondition{{Exact: "/exact"}}}}
	k.apply(t, namespaces(ns)...)
	k.apply(t, harness.LoopbackExternalName(ns, "echo", 80, echo.Port)...)
	// The certificate and the included HTTPProxy exist: only the refused
	// field is wrong.
	ca := harness.NewCA(t, "fields")
	k.apply(t, ca.Issue(t, "restricted.example.com").Secret(ns, "restricted-cert"))
	k.apply(t,
		&contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "restricted"}, Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{Fqdn: "restricted.example.com", TLS: tls},
			Includes:    includes,
			Routes:      echoRoute,
		}},
		&contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "child"}, Spec: contourv1.HTTPProxySpec{Routes: echoRoute}},
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
		if got := p.Spec.Includes; !reflect.DeepEqual(got, includes) {
			t.Errorf("includes read back = %+v, want %+v (pruned?)", got, includes)
		}
	})

	t.Run("UnsupportedField names the field; the host is not served", func(t *testing.T) {
		k.eventuallyProxy(t, ns, "restricted", want{status: metav1.ConditionFalse, reason: "UnsupportedField",
			errorTypes: []string{contourv1.ConditionTypeSpecError}, message: "spec.includes[0].conditions[0].exact: an exact path is not allowed"})
		// Once the sibling is served, Envoy has the build that refused
		// the restricted host (statuses are written beside xDS updates).
		c := harness.HTTPClient(k.httpAddr)
		harness.EventuallyStatus(t, c, "http://sibling.example.com/", http.StatusOK)
		if code, err := harness.StatusCode(c, "http://restricted.example.com/"); err != nil || code != http.StatusNotFound {
			t.Errorf("restricted.example.com: status %d (%v), want 404: a host with a refused field must not be served", code, err)
		}
	})

	t.Run("the sibling stays valid", func(t *testing.T) {
		k.eventuallyProxy(t, ns, "sibling", want{status: metav1.ConditionTrue, reason: "Valid", errorTypes: []string{}})
	})
}
