package e2e

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/e2e/harness"
)

// TestGatewayAPITLS runs the Gateway API's TLS features through the real
// Envoy: TLS to a backend a BackendTLSPolicy applies to, behind a peer
// that answers slowly (verified against the policy's CA and hostname,
// refused when they do not match), and a Gateway's frontend client
// certificate validation (no certificate, or one of another CA, is
// refused; the right one is served).
func TestGatewayAPITLS(t *testing.T) {
	g := startGatewayStack(t)
	backendCA, clientCA, otherCA := harness.NewCA(t, "backend-ca"), harness.NewCA(t, "client-ca"), harness.NewCA(t, "other-ca")

	// The backend: an echo served over TLS (backend.example.com), behind
	// a SlowPeer.
	tlsEcho := harness.StartEcho(t, "tls-echo")
	tlsAddr := serveTLS(t, backendCA.Issue(t, "backend.example.com"), tlsEcho)
	slow := harness.StartSlowPeer(t, tlsAddr)
	echo := harness.StartEcho(t, "plain")

	mtlsPort := harness.FreePort(t)
	mtls := gateway(gwNS, "mtls", "portcullis", httpsListener("https", mtlsPort, "mtls.example.com", "gw-tls"))
	mtls.Spec.TLS = &gwapiv1.GatewayTLSConfig{Frontend: &gwapiv1.FrontendTLSConfig{Default: gwapiv1.TLSConfig{
		Validation: &gwapiv1.FrontendTLSValidation{CACertificateRefs: []gwapiv1.ObjectReference{{Kind: "ConfigMap", Name: "client-ca"}}}}}}

	objs := namespaces(gwNS)
	objs = append(objs, harness.LoopbackExternalName(gwNS, "tls-echo", 80, harness.Port(t, slow.Addr))...)
	objs = append(objs, echoService(gwNS, echo)...)
	objs = append(objs,
		g.ca.Issue(t, "mtls.example.com").Secret(gwNS, "gw-tls"),
		caConfigMap("backend-ca", backendCA), caConfigMap("client-ca", clientCA),
		gatewayClass("portcullis", gatewayController),
		gateway(gwNS, "gw", "portcullis", httpListener("http", 80, "")),
		mtls,
		httpRoute(gwNS, "tls", parentRef("gw", ""), hostnames("tls.example.com"), rule("tls-echo")),
		httpRoute(gwNS, "mtls", parentRef("mtls", ""), hostnames("mtls.example.com"), rule("plain")),
		backendTLSPolicy("tls-echo", "backend.example.com"),
	)
	g.apply(t, objs...)
	http1 := harness.HTTPClient(g.httpAddr)

	t.Run("BackendTLSPolicy: TLS to the backend, verified, through a slow peer", func(t *testing.T) {
		eventuallyServed(t, http1, "tls-echo", "GET", "http://tls.example.com/")
		slow.SetFault(harness.Fault{Delay: 1500 * time.Millisecond})
		start := time.Now()
		a, err := do(http1, "GET", "http://tls.example.com/slow")
		if err == nil {
			err = a.served("tls-echo")
		}
		if err != nil {
			t.Fatalf("slow backend: %v", err)
		}
		if took := time.Since(start); took < 1500*time.Millisecond {
			t.Errorf("answered in %v: the slow peer was not on the way", took)
		}
		slow.SetFault(harness.Fault{})
	})

	t.Run("BackendTLSPolicy: a hostname the backend's certificate does not have is refused", func(t *testing.T) {
		g.apply(t, backendTLSPolicy("tls-echo", "wrong.example.com"))
		eventuallyStatus(t, http1, http.StatusServiceUnavailable, "GET", "http://tls.example.com/")
		g.apply(t, backendTLSPolicy("tls-echo", "backend.example.com"))
		eventuallyServed(t, http1, "tls-echo", "GET", "http://tls.example.com/")
	})

	t.Run("frontend validation: no certificate and another CA's are refused, the right one served", func(t *testing.T) {
		addr := net.JoinHostPort("127.0.0.1", fmt.Sprint(mtlsPort))
		good := mtlsClient(t, g.ca.CertPEM, addr, clientCA.Issue(t, "client"))
		var err error
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			var a answer
			if a, err = do(good, "GET", "https://mtls.example.com/"); err == nil {
				if err = a.served("plain"); err == nil {
					break
				}
			}
		}
		if err != nil {
			t.Fatalf("with the right certificate: %v", err)
		}
		for name, c := range map[string]*http.Client{
			"no certificate":   harness.HTTPSClient(g.ca.CertPEM, addr),
			"another CA's":     mtlsClient(t, g.ca.CertPEM, addr, otherCA.Issue(t, "client")),
			"the server's own": mtlsClient(t, g.ca.CertPEM, addr, g.ca.Issue(t, "client")),
		} {
			if a, err := do(c, "GET", "https://mtls.example.com/"); err == nil {
				t.Errorf("%s: served (%v), want the handshake refused", name, a)
			}
		}
	})
}

// serveTLS serves h over TLS with kp on a free loopback port; its address.
func serveTLS(t *testing.T, kp *harness.KeyPair, h http.Handler) string {
	t.Helper()
	cert, err := tls.X509KeyPair(kp.CertPEM, kp.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		_ = srv.Serve(tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}))
	}()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// caConfigMap is a ConfigMap of gwNS holding ca's certificate (ca.crt).
func caConfigMap(name string, ca *harness.CA) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: gwNS, Name: name}, Data: map[string]string{"ca.crt": string(ca.CertPEM)}}
}

// backendTLSPolicy has Envoy speak TLS to the Service svc of gwNS,
// verifying its certificate against the ConfigMap backend-ca and hostname.
func backendTLSPolicy(svc, hostname string) client.Object {
	return &gwapiv1.BackendTLSPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: gwNS, Name: svc}, Spec: gwapiv1.BackendTLSPolicySpec{
		TargetRefs: []gwapiv1.LocalPolicyTargetReferenceWithSectionName{{LocalPolicyTargetReference: gwapiv1.LocalPolicyTargetReference{Kind: "Service", Name: gwapiv1.ObjectName(svc)}}},
		Validation: gwapiv1.BackendTLSPolicyValidation{Hostname: gwapiv1.PreciseHostname(hostname),
			CACertificateRefs: []gwapiv1.LocalObjectReference{{Kind: "ConfigMap", Name: "backend-ca"}}},
	}}
}
