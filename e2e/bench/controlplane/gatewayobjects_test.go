package controlplane

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/e2e/harness"
)

func init() { utilruntime.Must(gwapiv1.Install(harness.Scheme)) }

// The Gateway API case: one GatewayClass of portcullis, one Gateway with
// an HTTP listener on 80 and an HTTPS listener on 443 (the shared Secret),
// served on Envoy's shared listeners (8080 and 8443), and N HTTPRoutes,
// each with its own hostname and 5 rules over the same 20 Services.
const (
	gatewayClassName = "bench"
	gatewayName      = "bench"
)

// gatewayHost is the hostname of HTTPRoute i.
func gatewayHost(i int) string { return fmt.Sprintf("route-%d.bench.example.com", i) }

// gatewayShared are the Gateway API case's shared objects: those of the
// HTTPProxy case (namespace, Secret, Services), the GatewayClass and the
// Gateway.
func gatewayShared(cert *harness.KeyPair) []client.Object {
	https := gwapiv1.HTTPSProtocolType
	tlsMode := gwapiv1.TLSModeTerminate
	return append(shared(cert),
		&gwapiv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: gatewayClassName},
			Spec: gwapiv1.GatewayClassSpec{ControllerName: "portcullis.dev/gateway-controller"}},
		&gwapiv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: gatewayName},
			Spec: gwapiv1.GatewaySpec{GatewayClassName: gatewayClassName, Listeners: []gwapiv1.Listener{
				{Name: "http", Protocol: gwapiv1.HTTPProtocolType, Port: 80},
				{Name: "https", Protocol: https, Port: 443, TLS: &gwapiv1.ListenerTLSConfig{Mode: &tlsMode,
					CertificateRefs: []gwapiv1.SecretObjectReference{{Name: "tls"}}}},
			}}},
	)
}

// redirectPath is the path of every HTTPRoute's rule that redirects to
// HTTPS: Envoy answers it without an upstream (the Services' addresses
// are not dialled), which tells that it serves the route.
const redirectPath = "/secure"

// httpRoute is HTTPRoute i, attached to both listeners: its hostname, 5
// path prefixes to Services and one redirecting to HTTPS (6 routes, as an
// HTTPProxy root of the HTTPProxy case with its include). Each extra path
// is one more redirecting rule (a 301 on the HTTP listener, where an
// unknown path is a 404).
func httpRoute(i int, extra ...string) *gwapiv1.HTTPRoute {
	r := &gwapiv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: fmt.Sprintf("route-%d", i)},
		Spec: gwapiv1.HTTPRouteSpec{
			CommonRouteSpec: gwapiv1.CommonRouteSpec{ParentRefs: []gwapiv1.ParentReference{{Name: gatewayName}}},
			Hostnames:       []gwapiv1.Hostname{gwapiv1.Hostname(gatewayHost(i))},
		},
	}
	prefix := gwapiv1.PathMatchPathPrefix
	match := func(path string) []gwapiv1.HTTPRouteMatch {
		return []gwapiv1.HTTPRouteMatch{{Path: &gwapiv1.HTTPPathMatch{Type: &prefix, Value: &path}}}
	}
	for n := 0; n < routes; n++ {
		port := gwapiv1.PortNumber(80)
		r.Spec.Rules = append(r.Spec.Rules, gwapiv1.HTTPRouteRule{
			Matches: match(fmt.Sprintf("/r%d", n)),
			BackendRefs: []gwapiv1.HTTPBackendRef{{BackendRef: gwapiv1.BackendRef{BackendObjectReference: gwapiv1.BackendObjectReference{
				Name: gwapiv1.ObjectName(fmt.Sprintf("svc-%d", (i+n)%services)), Port: &port}}}},
		})
	}
	for _, path := range append([]string{redirectPath}, extra...) {
		scheme, code := "https", 301
		r.Spec.Rules = append(r.Spec.Rules, gwapiv1.HTTPRouteRule{
			Matches: match(path),
			Filters: []gwapiv1.HTTPRouteFilter{{Type: gwapiv1.HTTPRouteFilterRequestRedirect,
				RequestRedirect: &gwapiv1.HTTPRequestRedirectFilter{Scheme: &scheme, StatusCode: &code}}},
		})
	}
	return r
}
