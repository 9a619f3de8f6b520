package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/portcullis/portcullis/e2e/harness"
)

// slowClientHosts makes ingress_http about 1.2 MB (hosts with routes of
// their own, which the translator cannot merge into one virtual host):
// over the xDS server's large-response size (1 MiB).
const slowClientHosts = 3000

// TestSlowXDSClients: xDS clients that subscribe to ingress_http (about
// 1.2 MB at 3,000 hosts) and then never read nor answer (ACK) what they
// are sent, 10 and then 100 of them (state of the world and delta, each
// on a connection of its own), do not hold back the real Envoy beside
// them: a new host reaches it in under 2 s. They are dropped after
// --xds-client-timeout, and the control plane's memory grows by less
// than 64 MiB under the 100 (docs/production.md, "xDS clients"). On the
// code before it, a new host reached the Envoy only once the slow
// clients went away.
func TestSlowXDSClients(t *testing.T) {
	echo := harness.StartEcho(t, "echo")
	dir := t.TempDir()
	objects := harness.Dir(dir)
	objs := harness.LoopbackEndpointSlice("default", "echo", 80, echo.Port)
	for i := range slowClientHosts {
		objs = append(objs, slowClientProxy(i))
	}
	// A TLS host has a route configuration of its own: ingress_http is
	// then not every route configuration, and a change of it is sent as
	// itself (not the table's shared encoding).
	tlsHost := slowClientProxy(slowClientHosts + 1000).(*contourv1.HTTPProxy)
	tlsHost.Spec.VirtualHost.TLS = &contourv1.TLS{SecretName: "slow-tls"}
	objs = append(objs, harness.NewCA(t, "slow").Issue(t, tlsHost.Spec.VirtualHost.Fqdn).Secret("default", "slow-tls"), tlsHost)
	if err := objects.Apply(context.Background(), objs...); err != nil {
		t.Fatal(err)
	}
	httpAddr, httpsAddr := harness.FreeAddr(t), harness.FreeAddr(t)
	cp := harness.StartControlPlane(t, "portcullis", httpAddr, httpsAddr, "--provider", "file", "-f", dir,
		"--xds-client-timeout", "20s")
	harness.StartEnvoyOn(t, cp.XDSAddr, "--sotw")
	c := harness.HTTPClient(httpAddr)
	harness.Eventually(t, 120*time.Second, func() error {
		return okStatus(c, fmt.Sprintf("http://host-%d.slow.example.com/", slowClientHosts-1))
	})
	time.Sleep(2 * time.Second) // settle: the first configuration applied
	rssBefore := procStatus(t, cp.Pid(), "VmRSS")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	next := slowClientHosts
	opened := 0
	for _, n := range []int{10, 100} {
		for ; opened < n; opened++ {
			harness.SlowXDSClient(ctx, t, cp.XDSAddr, "ingress_http", opened)
		}
		// They are sent ingress_http and hold it unanswered.
		time.Sleep(2 * time.Second)
		took := timeToEnvoy(t, objects, c, next)
		next++
		t.Logf("with %d slow xDS clients, a new host reached Envoy in %s", n, took.Round(time.Millisecond))
		if took > 2*time.Second {
			t.Errorf("with %d slow xDS clients, a new host took %s to reach Envoy; want < 2s", n, took.Round(time.Millisecond))
		}
	}
	rss := procStatus(t, cp.Pid(), "VmRSS")
	t.Logf("portcullis RSS: %d MiB before the slow clients, %d MiB with 100", rssBefore>>20, rss>>20)
	if rss-rssBefore > 64<<20 {
		t.Errorf("portcullis RSS grew by %d MiB under 100 slow xDS clients; want < 64 MiB", (rss-rssBefore)>>20)
	}

	// They are dropped after --xds-client-timeout (20 s), the real Envoy
	// (which answers) is not.
	harness.Eventually(t, 60*time.Second, func() error {
		v, err := cp.Metric("portcullis_xds_streams_dropped_total")
		if err != nil {
			return err
		}
		if v < 100 {
			return fmt.Errorf("%v slow xDS streams dropped, want 100", v)
		}
		return nil
	})
	if v, err := cp.Metric("portcullis_xds_streams_dropped_total"); err != nil || v != 100 {
		t.Errorf("%v xDS streams dropped (%v), want 100", v, err)
	}
	t.Logf("portcullis RSS once they were dropped: %d MiB", procStatus(t, cp.Pid(), "VmRSS")>>20)
	// And the Envoy is still served.
	took := timeToEnvoy(t, objects, c, next)
	if !strings.Contains(cp.Logs(), "dropping an xDS stream") {
		t.Error("no log line of a dropped xDS stream")
	}
	t.Logf("after the slow clients were dropped, a new host reached Envoy in %s", took.Round(time.Millisecond))
}

func slowClientProxy(i int) client.Object { return harness.DistinctRoutesProxy(i) }

// timeToEnvoy adds host i and returns how long it took to be served.
func timeToEnvoy(t *testing.T, objects harness.Dir, c *http.Client, i int) time.Duration {
	t.Helper()
	if err := objects.Apply(context.Background(), slowClientProxy(i)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	url := fmt.Sprintf("http://host-%d.slow.example.com/", i)
	harness.Eventually(t, 150*time.Second, func() error { return okStatus(c, url) })
	return time.Since(start)
}

func okStatus(c *http.Client, url string) error {
	code, err := harness.StatusCode(c, url)
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("%s: status %d", url, code)
	}
	return nil
}
