package e2e

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/e2e/harness"
)

// TestGatewayAPITLSAndTCPRoutes: a TLSRoute and a TCPRoute through the
// kubernetes provider into the real Envoy. On port 443 (the shared HTTPS
// listener), a TLS listener of mode Passthrough next to an HTTPS one: the
// client reaches a real TLS server by SNI and sees that server's own
// certificate (of a CA Envoy knows nothing of), which sees the SNI the
// client sent, while the HTTPS listener's host still terminates and
// routes HTTP; a name no route serves gets no connection. A TLS listener
// of mode Terminate on the same port: Envoy's certificate, no ALPN
// protocol, and a plain TCP server receives exactly the bytes the client
// wrote. A TCP listener
// of its own port proxies every connection to a plain TCP server, the
// bytes as they come.
func TestGatewayAPITLSAndTCPRoutes(t *testing.T) {
	g := startGatewayStack(t)
	echo := harness.StartEcho(t, "web")
	upstreamCA := harness.NewCA(t, "tls-route-upstream-ca")
	tlsUpstream := startLineServer(t, "tls", upstreamCA.Issue(t, "db.example.com"))
	plainUpstream := startLineServer(t, "plain", nil)
	tcpPort := harness.FreePort(t)

	objs := namespaces(gwNS)
	objs = append(objs, echoService(gwNS, echo)...)
	objs = append(objs, harness.LoopbackExternalName(gwNS, "tls-upstream", 443, tlsUpstream)...)
	objs = append(objs, harness.LoopbackExternalName(gwNS, "plain-upstream", 80, plainUpstream)...)
	passthrough := gwapiv1.Listener{Name: "tls", Port: 443, Protocol: gwapiv1.TLSProtocolType, Hostname: ptr.To(gwapiv1.Hostname("*.example.com")),
		TLS: &gwapiv1.ListenerTLSConfig{Mode: ptr.To(gwapiv1.TLSModePassthrough)}}
	terminate := gwapiv1.Listener{Name: "terminate", Port: 443, Protocol: gwapiv1.TLSProtocolType, Hostname: ptr.To(gwapiv1.Hostname("term.example.org")),
		TLS: &gwapiv1.ListenerTLSConfig{CertificateRefs: []gwapiv1.SecretObjectReference{{Name: "term-tls"}}}}
	tcp := gwapiv1.Listener{Name: "tcp", Port: gwapiv1.PortNumber(tcpPort), Protocol: gwapiv1.TCPProtocolType}
	objs = append(objs,
		g.ca.Issue(t, "web.example.com").Secret(gwNS, "web-tls"),
		g.ca.Issue(t, "term.example.org").Secret(gwNS, "term-tls"),
		gatewayClass("portcullis", gatewayController),
		gateway(gwNS, "streams", "portcullis", passthrough, httpsListener("web", 443, "web.example.com", "web-tls"), terminate, tcp),
		httpRoute(gwNS, "web", parentRef("streams", "web"), nil, rule("web")),
		&gwapiv1.TLSRoute{ObjectMeta: metav1.ObjectMeta{Namespace: gwNS, Name: "db"}, Spec: gwapiv1.TLSRouteSpec{
			CommonRouteSpec: gwapiv1.CommonRouteSpec{ParentRefs: []gwapiv1.ParentReference{parentRef("streams", "tls")}},
			Hostnames:       hostnames("db.example.com"),
			Rules:           []gwapiv1.TLSRouteRule{{BackendRefs: []gwapiv1.BackendRef{{BackendObjectReference: streamBackend("tls-upstream", 443)}}}},
		}},
		&gwapiv1.TLSRoute{ObjectMeta: metav1.ObjectMeta{Namespace: gwNS, Name: "term"}, Spec: gwapiv1.TLSRouteSpec{
			CommonRouteSpec: gwapiv1.CommonRouteSpec{ParentRefs: []gwapiv1.ParentReference{parentRef("streams", "terminate")}},
			Hostnames:       hostnames("term.example.org"),
			Rules:           []gwapiv1.TLSRouteRule{{BackendRefs: []gwapiv1.BackendRef{{BackendObjectReference: streamBackend("plain-upstream", 80)}}}},
		}},
		&gwapiv1.TCPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: gwNS, Name: "plain"}, Spec: gwapiv1.TCPRouteSpec{
			CommonRouteSpec: gwapiv1.CommonRouteSpec{ParentRefs: []gwapiv1.ParentReference{parentRef("streams", "tcp")}},
			Rules:           []gwapiv1.TCPRouteRule{{BackendRefs: []gwapiv1.BackendRef{{BackendObjectReference: streamBackend("plain-upstream", 80)}}}},
		}},
	)
	g.apply(t, objs...)

	t.Run("statuses", func(t *testing.T) {
		tr := &gwapiv1.TLSRoute{ObjectMeta: metav1.ObjectMeta{Namespace: gwNS, Name: "db"}}
		g.eventuallyRouteParent(t, tr, &tr.Status.RouteStatus, "streams", "tls", accepted, resolvedRefs)
		cr := &gwapiv1.TCPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: gwNS, Name: "plain"}}
		g.eventuallyRouteParent(t, cr, &cr.Status.RouteStatus, "streams", "tcp", accepted, resolvedRefs)
	})

	t.Run("TLSRoute: the upstream's certificate and TLS, by SNI", func(t *testing.T) {
		var got string
		var state tls.ConnectionState
		harness.Eventually(t, 30*time.Second, func() (err error) {
			got, state, err = tlsExchange(g.httpsAddr, "db.example.com", upstreamCA.CertPEM, "hello through\n")
			return err
		})
		if cn := state.PeerCertificates[0].Issuer.CommonName; cn != "tls-route-upstream-ca" {
			t.Errorf("certificate issued by %q, want the upstream's CA", cn)
		}
		if want := "tls sni=db.example.com got=hello through"; got != want {
			t.Errorf("upstream answered %q, want %q", got, want)
		}
		if _, _, err := tlsExchange(g.httpsAddr, "other.example.com", upstreamCA.CertPEM, "x\n"); err == nil {
			t.Errorf("a name no TLSRoute serves reached an upstream")
		}
	})

	t.Run("TLSRoute, mode Terminate: Envoy's certificate, the decrypted stream", func(t *testing.T) {
		var got string
		var state tls.ConnectionState
		harness.Eventually(t, 30*time.Second, func() (err error) {
			got, state, err = tlsExchange(g.httpsAddr, "term.example.org", g.ca.CertPEM, "hello plain\n")
			return err
		})
		if cn := state.PeerCertificates[0].Subject.CommonName; cn != "term.example.org" {
			t.Errorf("certificate for %q, want Envoy's for term.example.org", cn)
		}
		if state.NegotiatedProtocol != "" {
			t.Errorf("ALPN negotiated %q, want none: the stream is not HTTP", state.NegotiatedProtocol)
		}
		if want := "plain sni= got=hello plain"; got != want {
			t.Errorf("upstream answered %q, want %q (the decrypted bytes)", got, want)
		}
	})

	t.Run("the HTTPS listener on the same port still terminates", func(t *testing.T) {
		c := harness.HTTPSClient(g.ca.CertPEM, g.httpsAddr)
		eventuallyServed(t, c, "web", "GET", "https://web.example.com/")
	})

	t.Run("TCPRoute: the bytes as they come", func(t *testing.T) {
		addr := fmt.Sprintf("127.0.0.1:%d", tcpPort)
		var got string
		harness.Eventually(t, 30*time.Second, func() (err error) {
			got, err = lineExchange(addr, "hello tcp\n")
			return err
		})
		if want := "plain sni= got=hello tcp"; got != want {
			t.Errorf("upstream answered %q, want %q", got, want)
		}
	})
}

// streamBackend is a Service port of gwNS.
func streamBackend(service string, port int32) gwapiv1.BackendObjectReference {
	return gwapiv1.BackendObjectReference{Name: gwapiv1.ObjectName(service), Port: ptr.To(gwapiv1.PortNumber(port))}
}

// lineExchange sends one line over plain TCP and returns the line
// answered.
func lineExchange(addr, line string) (string, error) {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Write([]byte(line)); err != nil {
		return "", fmt.Errorf("writing the line: %w", err)
	}
	got, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("reading the answer: %w", err)
	}
	return strings.TrimSuffix(got, "\n"), nil
}
