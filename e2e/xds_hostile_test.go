package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/e2e/harness"
)

// A hostile xDS client: anything that can open an ADS stream to the
// control plane (with no mTLS, anything that reaches the port) next to a
// real Envoy.
const (
	xdsHostileNS = "xds-hostile"
	clusterType  = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
	routeType    = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"
	listenerType = "type.googleapis.com/envoy.config.listener.v3.Listener"
	// The storm's bounds, generous for a busy machine: on the code before
	// them, 20,000 NACKs of 1 KB grew /status by 25 MB and RSS by 70 MB,
	// and 100 of 2 MB grew RSS to 1.7 GB.
	stormRSSGrowth  = 200 << 20
	stormStatusSize = 1 << 20
)

// adminStatus is what the test reads of the admin /status.
type adminStatus struct {
	Objects []struct {
		Kind, Namespace, Name string
		Status                contourv1.HTTPProxyStatus
	}
	Envoy struct {
		Rejections []struct {
			TypeURL   string
			Resources []string
			Message   string
		}
	}
}

func readStatus(t *testing.T, admin string) (adminStatus, int) {
	t.Helper()
	resp, err := http.Get("http://" + admin + "/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var st adminStatus
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	return st, len(b)
}

// proxyReason is the Valid condition's reason of an HTTPProxy in /status.
func proxyReason(st adminStatus, name string) string {
	for _, o := range st.Objects {
		if o.Kind == "HTTPProxy" && o.Namespace == xdsHostileNS && o.Name == name {
			_, reason, _ := harness.ValidOf(o.Status)
			return reason
		}
	}
	return ""
}

// hostileStream opens a state-of-the-world ADS stream to xds.
func hostileStream(t *testing.T, conn *grpc.ClientConn) discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesClient {
	t.Helper()
	st, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func nackRequest(typeURL, nonce, msg string) *discoveryv3.DiscoveryRequest {
	return &discoveryv3.DiscoveryRequest{TypeUrl: typeURL, ResponseNonce: nonce, VersionInfo: "1", ErrorDetail: &rpcstatus.Status{Message: msg}}
}

// TestHostileXDSClient: next to a real Envoy, a client of the control
// plane's xDS port can neither forge another tenant's status nor grow the
// control plane with NACKs.
func TestHostileXDSClient(t *testing.T) {
	echo := harness.StartEcho(t, "echo")
	ca := harness.NewCA(t, "portcullis-xds-hostile")
	dir := harness.Dir(t.TempDir())
	httpAddr, httpsAddr := harness.FreeAddr(t), harness.FreeAddr(t)
	cp := harness.StartControlPlane(t, "portcullis", httpAddr, httpsAddr, "--provider", "file", "-f", string(dir))
	harness.StartEnvoyOn(t, cp.XDSAddr)
	objs := append([]client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: xdsHostileNS}}},
		harness.LoopbackEndpointSlice(xdsHostileNS, "echo", 80, echo.Port)...)
	route := []contourv1.Route{{Services: []contourv1.Service{{Name: "echo", Port: 80}}}}
	objs = append(objs, ca.Issue(t, "tls0.example.com").Secret(xdsHostileNS, "tls0"),
		&contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: xdsHostileNS, Name: "tenant"}, Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{Fqdn: "tls0.example.com", TLS: &contourv1.TLS{SecretName: "tls0"}}, Routes: route}},
		&contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: xdsHostileNS, Name: "plain"}, Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{Fqdn: "plain.example.com"}, Routes: route}})
	if err := dir.Apply(context.Background(), objs...); err != nil {
		t.Fatal(err)
	}
	harness.EventuallyStatus(t, harness.HTTPSClient(ca.CertPEM, httpsAddr), "https://tls0.example.com/", http.StatusOK)
	harness.EventuallyStatus(t, harness.HTTPClient(httpAddr), "http://plain.example.com/", http.StatusOK)
	conn, err := grpc.NewClient(cp.XDSAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	t.Run("a forged NACK reaches no status", func(t *testing.T) {
		st := hostileStream(t, conn)
		for _, req := range []*discoveryv3.DiscoveryRequest{
			nackRequest(routeType, "1", "route https/tls0.example.com: forged by another tenant"),
			nackRequest(routeType, "forged", "https/tls0.example.com forged"),
			nackRequest(listenerType, "1", "listener ingress_http: forged"),
			nackRequest(listenerType, "", "ingress_https: forged"),
		} {
			if err := st.Send(req); err != nil {
				t.Fatal(err)
			}
		}
		for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			s, _ := readStatus(t, cp.AdminAddr)
			for _, name := range []string{"tenant", "plain"} {
				if r := proxyReason(s, name); r != "Valid" {
					t.Fatalf("HTTPProxy %s: reason %q after a forged NACK, want Valid", name, r)
				}
			}
			for _, r := range s.Envoy.Rejections {
				if len(r.Resources) > 0 {
					t.Fatalf("a forged NACK was attributed: %+v", r)
				}
			}
		}
		_ = st.CloseSend()
	})

	t.Run("an unknown type URL is refused", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		st, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Send(nackRequest("type.googleapis.com/made.up.Type0001", "", "x")); err != nil {
			t.Fatal(err)
		}
		_, err = st.Recv()
		if s := status.Convert(err); s.Code() != codes.InvalidArgument || !strings.Contains(s.Message(), "made.up.Type0001") {
			t.Errorf("unknown type URL: %v, want InvalidArgument naming it", err)
		}
	})

	t.Run("a NACK storm is bounded", func(t *testing.T) {
		pid := cp.Pid()
		_, statusBefore := readStatus(t, cp.AdminAddr)
		rssBefore := procStatus(t, pid, "VmRSS")
		ctx, cancel := context.WithCancel(t.Context())
		for range 20 {
			st, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := st.Send(&discoveryv3.DiscoveryRequest{TypeUrl: clusterType}); err != nil {
				t.Fatal(err)
			}
			resp, err := st.Recv()
			if err != nil {
				t.Fatal(err)
			}
			go func() {
				for { // drain
					if _, err := st.Recv(); err != nil {
						return
					}
				}
			}()
			kb := strings.Repeat("k", 1000)
			for i := range 1000 { // 20,000 NACKs of 1 KB in all
				if err := st.Send(nackRequest(clusterType, resp.Nonce, fmt.Sprintf("%d %s", i, kb))); err != nil {
					t.Fatal(err)
				}
			}
			big := strings.Repeat("m", 2<<20)
			for range 5 { // 100 NACKs of 2 MB in all
				if err := st.Send(nackRequest(clusterType, resp.Nonce, big)); err != nil {
					t.Fatal(err)
				}
			}
		}
		for i := range 1000 { // made-up type URLs
			st, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(ctx)
			if err != nil {
				t.Fatal(err)
			}
			_ = st.Send(nackRequest(fmt.Sprintf("type.googleapis.com/made.up.T%05d", i), "", strings.Repeat("u", 1000)))
		}
		// Until every NACK is read: the counter stops growing.
		var last float64 = -1
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
			n := harness.MetricValue(t, "http://"+cp.AdminAddr+"/metrics", "portcullis_xds_rejections_total")
			if n == last && n >= 20*1005 {
				break
			}
			last = n
		}
		rssAfter := procStatus(t, pid, "VmRSS")
		s, statusAfter := readStatus(t, cp.AdminAddr)
		series := countSeries(t, "http://"+cp.AdminAddr+"/metrics", "portcullis_xds_rejections_total")
		t.Logf("RSS %d -> %d MiB, /status %d -> %d bytes, %d rejections kept, %d rejection series",
			rssBefore>>20, rssAfter>>20, statusBefore, statusAfter, len(s.Envoy.Rejections), series)
		if rssAfter-rssBefore > stormRSSGrowth {
			t.Errorf("RSS grew by %d MiB, want at most %d", (rssAfter-rssBefore)>>20, stormRSSGrowth>>20)
		}
		if statusAfter-statusBefore > stormStatusSize {
			t.Errorf("/status grew by %d bytes, want at most %d", statusAfter-statusBefore, stormStatusSize)
		}
		if series > 6 {
			t.Errorf("%d series of portcullis_xds_rejections_total, want at most 6 (the types, and other)", series)
		}
		if n := harness.MetricValue(t, "http://"+cp.AdminAddr+"/metrics", `portcullis_xds_refused_total{reason="unknown_type"}`); n < 1000 {
			t.Errorf(`portcullis_xds_refused_total{reason="unknown_type"} = %v, want 1000`, n)
		}
		cancel()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			s, _ := readStatus(t, cp.AdminAddr)
			if len(s.Envoy.Rejections) == 0 && proxyReason(s, "tenant") == "Valid" && proxyReason(s, "plain") == "Valid" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("10 s after the hostile streams closed: rejections %d, tenant %q, plain %q", len(s.Envoy.Rejections),
					proxyReason(s, "tenant"), proxyReason(s, "plain"))
			}
		}
	})
}

// countSeries counts the series of a metric.
func countSeries(t *testing.T, url, name string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, name+"{") || strings.HasPrefix(line, name+" ") {
			n++
		}
	}
	return n
}
