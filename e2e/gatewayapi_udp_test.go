package e2e

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/e2e/harness"
)

// udpIdleTimeout is the UDP session idle timeout the test configures
// (gateway.udpSessionIdleTimeout): the slow peer answers well within it,
// the slower one well after it.
const udpIdleTimeout = 3 * time.Second

// TestGatewayAPIUDPRoute: UDPRoutes through the real Envoy, to real UDP
// servers. A UDP listener splits the sessions (one per client socket)
// between two backends by the route's weights, 3 to 1, over many
// datagrams, and keeps each session on its backend; a TCP listener of the
// same port is a socket of its own, served beside it. A peer that
// answers in 1.5 s is answered through the session, which the idle
// timeout (3 s) outlives; a peer slower than the timeout is not: Envoy
// closed the session, and its answer is dropped. A route whose backend
// does not exist drops every datagram. Through the file provider: the
// backends are on 127.0.0.1, which the API server refuses in
// EndpointSlices (and ExternalName UDP backends cannot be weighted).
func TestGatewayAPIUDPRoute(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "portcullis.yaml")
	harness.WriteConfigFile(t, cfg, fmt.Sprintf("gateway:\n  udpSessionIdleTimeout: %s\n", udpIdleTimeout))
	harness.StartEnvoyAndControlPlaneAt(t, gatewayEnvoyAddr(t, 80), gatewayEnvoyAddr(t, 443), "--provider", "file", "-f", dir, "--config", cfg)

	heavy, light := harness.StartUDPEcho(t, "heavy", 0), harness.StartUDPEcho(t, "light", 0)
	slow, slower := harness.StartUDPEcho(t, "slow", 1500*time.Millisecond), harness.StartUDPEcho(t, "slower", udpIdleTimeout+2*time.Second)
	tcpUpstream := startLineServer(t, "plain", nil)
	split, slowPort, slowerPort, missingPort := harness.FreeUDPAndTCPPort(t), harness.FreeUDPAndTCPPort(t), harness.FreeUDPAndTCPPort(t), harness.FreeUDPAndTCPPort(t)

	var objs []client.Object
	for _, e := range []*harness.UDPEcho{heavy, light, slow, slower} {
		objs = append(objs, harness.LoopbackUDPEndpointSlice(gwNS, e.Name, 53, e.Port)...)
	}
	objs = append(objs, harness.LoopbackEndpointSlice(gwNS, "plain", 80, tcpUpstream)...)
	udp := func(name string, port int) gwapiv1.Listener {
		return gwapiv1.Listener{Name: gwapiv1.SectionName(name), Port: gwapiv1.PortNumber(port), Protocol: gwapiv1.UDPProtocolType}
	}
	objs = append(objs,
		gatewayClass("portcullis", gatewayController),
		gateway(gwNS, "udp", "portcullis", udp("split", split), udp("slow", slowPort), udp("slower", slowerPort), udp("missing", missingPort),
			gwapiv1.Listener{Name: "tcp", Port: gwapiv1.PortNumber(split), Protocol: gwapiv1.TCPProtocolType}),
		udpRoute("split", "split", weighted("heavy", 3), weighted("light", 1)),
		udpRoute("slow", "slow", weighted("slow", 1)),
		udpRoute("slower", "slower", weighted("slower", 1)),
		udpRoute("missing", "missing", weighted("nowhere", 1)),
		&gwapiv1.TCPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: gwNS, Name: "tcp"}, Spec: gwapiv1.TCPRouteSpec{
			CommonRouteSpec: gwapiv1.CommonRouteSpec{ParentRefs: []gwapiv1.ParentReference{parentRef("udp", "tcp")}},
			Rules:           []gwapiv1.TCPRouteRule{{BackendRefs: []gwapiv1.BackendRef{{BackendObjectReference: streamBackend("plain", 80)}}}},
		}},
	)
	if err := harness.Dir(dir).Apply(context.Background(), objs...); err != nil {
		t.Fatal(err)
	}
	at := func(port int) string { return fmt.Sprintf("127.0.0.1:%d", port) }
	harness.Eventually(t, 30*time.Second, func() error {
		_, err := harness.UDPExchange(nil, at(split), "ready", time.Second)
		return err
	})

	t.Run("the sessions split by weight, each kept on its backend", func(t *testing.T) {
		const sessions = 200
		got := map[string]int{}
		for i := range sessions {
			answer, err := harness.UDPExchange(nil, at(split), fmt.Sprintf("n%d", i), 2*time.Second)
			if err != nil {
				t.Fatalf("datagram %d: %v", i, err)
			}
			name, _, _ := strings.Cut(answer, " ")
			got[name]++
		}
		// 3:1 is 150:50; a binomial deviation of 6 sessions: 125 to 175
		// leaves four of them either way.
		if got["heavy"] < 125 || got["heavy"] > 175 || got["heavy"]+got["light"] != sessions {
			t.Errorf("sessions by backend %v, want about 150 heavy and 50 light", got)
		}
		conn := dialUDP(t, at(split))
		first, err := harness.UDPExchange(conn, "", "one", 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 10 {
			answer, err := harness.UDPExchange(conn, "", fmt.Sprintf("again%d", i), 2*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if a, b, _ := strings.Cut(answer, " "); a != strings.Fields(first)[0] {
				t.Fatalf("datagram %d of one session answered by %s (%s), its first by %s", i, a, b, first)
			}
		}
	})

	t.Run("a TCP listener of the same port is its own socket", func(t *testing.T) {
		got, err := lineExchange(at(split), "hello tcp\n")
		if err != nil {
			t.Fatal(err)
		}
		if want := "plain sni= got=hello tcp"; got != want {
			t.Errorf("TCP upstream answered %q, want %q", got, want)
		}
	})

	t.Run("a peer answering in 1.5 s: the session outlives it", func(t *testing.T) {
		start := time.Now()
		got, err := harness.UDPExchange(nil, at(slowPort), "patience", 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if got != "slow got=patience" || time.Since(start) < 1500*time.Millisecond {
			t.Errorf("answered %q after %v, want the slow peer's after 1.5 s", got, time.Since(start))
		}
	})

	t.Run("a peer slower than the idle timeout: its answer is dropped", func(t *testing.T) {
		before := slower.Received()
		got, err := harness.UDPExchange(nil, at(slowerPort), "too late", udpIdleTimeout+4*time.Second)
		if err == nil {
			t.Fatalf("answered %q after the session's idle timeout", got)
		}
		if slower.Received() != before+1 {
			t.Errorf("the slower peer received %d datagrams, want 1: the datagram went through, its answer did not", slower.Received()-before)
		}
	})

	t.Run("a route whose backend does not exist drops the datagrams", func(t *testing.T) {
		if got, err := harness.UDPExchange(nil, at(missingPort), "anyone?", time.Second); err == nil {
			t.Errorf("answered %q", got)
		}
	})
}

// udpRoute is a UDPRoute of gwNS attached to the Gateway udp's listener
// section, with one rule of backends.
func udpRoute(name, section string, backends ...gwapiv1.BackendRef) *gwapiv1.UDPRoute {
	return &gwapiv1.UDPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: gwNS, Name: name}, Spec: gwapiv1.UDPRouteSpec{
		CommonRouteSpec: gwapiv1.CommonRouteSpec{ParentRefs: []gwapiv1.ParentReference{parentRef("udp", section)}},
		Rules:           []gwapiv1.UDPRouteRule{{BackendRefs: backends}},
	}}
}

// weighted is a backendRef to port 53 of the Service name of gwNS.
func weighted(name string, weight int32) gwapiv1.BackendRef {
	return gwapiv1.BackendRef{BackendObjectReference: streamBackend(name, 53), Weight: ptr.To(weight)}
}

// dialUDP is a UDP socket connected to addr: one session of a UDP proxy.
func dialUDP(t *testing.T, addr string) *net.UDPConn {
	t.Helper()
	raddr, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.DialUDP("udp", nil, raddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}
