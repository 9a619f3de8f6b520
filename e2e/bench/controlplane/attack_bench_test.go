package controlplane

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"testing"
	"text/tabwriter"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/e2e/harness"
)

// The attack benchmark's workload: hosts with routes of their own make
// ingress_http about 1.2 MB (over the xDS server's former large-response
// size), and each case times attackChanges new hosts.
const (
	attackHosts   = 3000
	attackChanges = 5
)

// attackRow is one case of BenchmarkControlPlaneUnderAttack.
type attackRow struct {
	name        string
	changes     []time.Duration // a new host until the Envoy serves it
	rss, status int64           // portcullis VmRSS and /status size after the changes
}

// BenchmarkControlPlaneUnderAttack serves attackHosts hosts to a real
// Envoy from `portcullis serve -f` and times a new host until the Envoy
// serves it: with no hostile client (the same run's baseline), beside 10
// and then 100 xDS streams that subscribe to ingress_http and never read
// nor answer, and during and after a storm of 20,000 NACKs of 1 KB from
// 20 more streams. It prints each case's median and slowest change, its
// ratio to the baseline, the control plane's RSS and the size of its
// /status (docs/production.md, "xDS clients"; the bounds are asserted by
// TestSlowXDSClients and TestHostileXDSClient).
func BenchmarkControlPlaneUnderAttack(b *testing.B) {
	objects, cp, c := startAttackStack(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	next := attackHosts
	measure := func(name string) attackRow {
		row := attackRow{name: name}
		for range attackChanges {
			row.changes = append(row.changes, newHostServed(b, objects, c, next))
			next++
		}
		row.rss, _ = harness.ProcStatus(cp.Pid(), "VmRSS")
		row.status = statusSize(b, cp.AdminAddr)
		return row
	}
	rows := []attackRow{measure("no hostile client")}
	opened := 0
	for _, n := range []int{10, 100} {
		for ; opened < n; opened++ {
			harness.SlowXDSClient(ctx, b, cp.XDSAddr, "ingress_http", opened)
		}
		time.Sleep(2 * time.Second) // they are sent ingress_http and hold it
		rows = append(rows, measure(fmt.Sprintf("%d streams that never read nor ACK", n)))
	}
	storm := make(chan struct{})
	go func() {
		defer close(storm)
		harness.NACKStorm(ctx, b, cp.XDSAddr, 20, 1000, 1000)
	}()
	rows = append(rows, measure("during a storm of 20,000 NACKs of 1 KB"))
	<-storm
	rows = append(rows, measure("after the storm"))
	printAttackTable(rows)
}

// startAttackStack serves attackHosts hosts and a TLS host (so that
// ingress_http is not every route configuration) to a real Envoy, and
// waits until the Envoy serves them.
func startAttackStack(b *testing.B) (harness.Dir, *harness.ControlPlane, *http.Client) {
	echo := harness.StartEcho(b, "echo")
	dir := b.TempDir()
	objects := harness.Dir(dir)
	objs := []client.Object{}
	objs = append(objs, harness.LoopbackEndpointSlice("default", "echo", 80, echo.Port)...)
	for i := range attackHosts {
		objs = append(objs, harness.DistinctRoutesProxy(i))
	}
	tlsHost := harness.DistinctRoutesProxy(attackHosts + 100000)
	tlsHost.Spec.VirtualHost.TLS = &contourv1.TLS{SecretName: "attack-tls"}
	objs = append(objs, harness.NewCA(b, "attack").Issue(b, tlsHost.Spec.VirtualHost.Fqdn).Secret("default", "attack-tls"), tlsHost)
	if err := objects.Apply(context.Background(), objs...); err != nil {
		b.Fatal(err)
	}
	httpAddr, httpsAddr := harness.FreeAddr(b), harness.FreeAddr(b)
	// A client timeout longer than the benchmark: the slow streams stay.
	cp := harness.StartControlPlane(b, "portcullis", httpAddr, httpsAddr, "--provider", "file", "-f", dir, "--xds-client-timeout", "1h")
	harness.StartEnvoyOn(b, cp.XDSAddr)
	c := harness.HTTPClient(httpAddr)
	harness.EventuallyStatus(b, c, fmt.Sprintf("http://host-%d.slow.example.com/", attackHosts-1), http.StatusOK)
	time.Sleep(2 * time.Second) // the first configuration applied
	return objects, cp, c
}

// newHostServed adds host i and returns how long the Envoy took to serve
// it.
func newHostServed(b *testing.B, objects harness.Dir, c *http.Client, i int) time.Duration {
	if err := objects.Apply(context.Background(), harness.DistinctRoutesProxy(i)); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	harness.EventuallyStatus(b, c, fmt.Sprintf("http://host-%d.slow.example.com/", i), http.StatusOK)
	return time.Since(start)
}

// statusSize is the size of the admin /status document.
func statusSize(b *testing.B, admin string) int64 {
	resp, err := http.Get("http://" + admin + "/status")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		b.Fatal(err)
	}
	return n
}

func printAttackTable(rows []attackRow) {
	median := func(ds []time.Duration) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[len(s)/2]
	}
	base := median(rows[0].changes)
	fmt.Printf("\nA new host until a real Envoy serves it, %d hosts (ingress_http about 1.2 MB), %d changes a case; baseline: no hostile client, same run\n", attackHosts, attackChanges)
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "case\tmedian\tslowest\tvs baseline\tportcullis RSS\t/status\t")
	for _, r := range rows {
		m := median(r.changes)
		fmt.Fprintf(w, "%s\t%s\t%s\t%.2fx\t%d MiB\t%d KB\t\n", r.name, m.Round(time.Millisecond), slices.Max(r.changes).Round(time.Millisecond),
			float64(m)/float64(base), r.rss>>20, r.status>>10)
	}
	w.Flush()
}
