package controlplane

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/portcullis/portcullis/e2e/harness"
	"github.com/portcullis/portcullis/e2e/loadgen"
)

// Targets of the fan-out benchmark (issue 17), at N = 1,000 clients.
const (
	targetFanoutACK = 2 * time.Second
	targetFanoutRSS = 1536 << 20
	// fanoutChanges is how many changes are timed per client count and
	// protocol in each round.
	fanoutChanges = 5
	// connectBatch clients connect at a time, each batch synced before the
	// next: a fleet rolls out, it does not connect in one instant.
	connectBatch = 50
)

// fanoutClients are the issue's client counts, or
// PORTCULLIS_BENCH_FANOUT_CLIENTS ("1,100").
func fanoutClients() []int {
	env := os.Getenv("PORTCULLIS_BENCH_FANOUT_CLIENTS")
	if env == "" {
		return []int{1, 100, 1000}
	}
	var out []int
	for _, f := range strings.Split(env, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			panic("PORTCULLIS_BENCH_FANOUT_CLIENTS: " + env)
		}
		out = append(out, n)
	}
	return out
}

// fanoutRoots is how many HTTPProxy roots the control plane serves: the
// largest of the control-plane scales (10,000 unless
// PORTCULLIS_BENCH_SCALES says otherwise).
func fanoutRoots() int { return scales[len(scales)-1] }

// fanoutRow is one client count and protocol, over every round.
type fanoutRow struct {
	allACKed   []time.Duration // per change: until the last client ACKed it
	clientACKs []time.Duration // every client's ACK of every change
	ratios     []float64       // per change: slowest client / median client
	sync       []time.Duration // per round: N clients connected -> all synced
	cpu        time.Duration   // portcullis CPU during the changes
	changes    int
	rss        int64 // portcullis VmRSS after the changes (largest of the rounds)
	peak       int64 // portcullis VmHWM after the changes (largest of the rounds)
	clientCPU  time.Duration
	decoded    int64 // bytes of resources the clients decoded during the changes
}

var protocols = []struct {
	name  string
	delta bool
}{{"SotW", false}, {"delta", true}}

// BenchmarkControlPlaneFanout connects N simulated Envoys (adsClient) to
// one `portcullis serve` serving the HTTPProxy case at 10,000 roots
// against the real API server, and times one HTTPProxy change until every
// client has ACKed a response carrying it, for N = 1, 100 and 1,000, over
// state-of-the-world and delta ADS (alternating, over
// PORTCULLIS_BENCH_ROUNDS rounds, 1 by default). It reports the control
// plane's CPU per change and its RSS.
func BenchmarkControlPlaneFanout(b *testing.B) {
	portcullis := harness.BuildBinary(b, "github.com/portcullis/portcullis/controlplane/cmd/portcullis")
	cert := harness.NewCA(b, "bench").Issue(b, "*.bench.example.com")
	w := workloads[0] // HTTPProxy
	roots := fanoutRoots()
	rounds := 1
	if n, err := strconv.Atoi(os.Getenv("PORTCULLIS_BENCH_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}

	api := harness.StartAPIServer(b, harness.CRDDir(b))
	free := func() string { return fmt.Sprintf("127.0.0.1:%d", harness.FreePort(b)) }
	xds, admin := free(), free()
	p := harness.StartProcess(b, "portcullis", portcullis, "serve", "--provider", "kubernetes", "--kubeconfig", api.KubeconfigPath,
		"--xds-address", xds, "--admin-address", admin, "--envoy-http-address", free(), "--envoy-https-address", free())
	ctx := context.Background()
	if err := api.Apply(ctx, w.shared(cert)...); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	createConcurrently(b, api.Client, w.hostObjects(0, roots))
	b.Logf("created %d objects in %v", len(w.hostObjects(0, roots)), time.Since(start).Round(time.Millisecond))
	waitReady(b, admin)
	waitStatusesWritten(b, admin, 10*time.Minute)
	idleRSS := rss(p.Pid(), "VmRSS:")

	k := &stack{api: api, portcullis: p, admin: admin}
	results := map[string]map[int]*fanoutRow{}
	for _, proto := range protocols {
		results[proto.name] = map[int]*fanoutRow{}
	}
	change := 0
	for _, n := range fanoutClients() {
		for round := 0; round < rounds; round++ {
			for _, proto := range protocols {
				r := results[proto.name][n]
				if r == nil {
					r = &fanoutRow{}
					results[proto.name][n] = r
				}
				profile := ""
				if prof := os.Getenv("PORTCULLIS_BENCH_PROFILE"); prof != "" && round == 0 && n == fanoutClients()[len(fanoutClients())-1] {
					ext := filepath.Ext(prof)
					profile = strings.TrimSuffix(prof, ext) + "-fanout-" + proto.name + ext
				}
				runFanout(b, k, w, xds, n, proto.delta, &change, r, profile)
				b.Logf("N=%d %s round %d: all ACKed %v, sync %v, RSS %d MiB (peak %d MiB)", n, proto.name, round,
					r.allACKed[len(r.allACKed)-fanoutChanges:], r.sync[len(r.sync)-1], r.rss>>20, r.peak>>20)
			}
		}
	}
	fmt.Print("\n" + fanoutTable(results, roots, rounds, idleRSS))
}

// runFanout connects n clients, waits until all are synced, times
// fanoutChanges changes and disconnects them.
// With profile, a 10 s CPU profile of portcullis during the changes is
// saved there.
func runFanout(b *testing.B, k *stack, w workload, xds string, n int, delta bool, change *int, r *fanoutRow, profile string) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	clients := make([]*adsClient, n)
	start := time.Now()
	for i := range clients {
		c := newADSClient(fmt.Sprintf("envoy-%d", i), delta)
		clients[i] = c
		wg.Add(1)
		go func() { defer wg.Done(); c.run(ctx, xds) }()
		if (i+1)%connectBatch == 0 || i == n-1 {
			waitClientsReady(b, clients[:i+1], 10*time.Minute)
		}
	}
	r.sync = append(r.sync, time.Since(start))
	waitStatusesWritten(b, k.admin, time.Minute)

	profiled := make(chan struct{})
	if profile != "" {
		go func() {
			defer close(profiled)
			saveProfile(b, "http://"+k.admin+"/debug/pprof/profile?seconds=10", profile)
		}()
	} else {
		close(profiled)
	}
	cpu0, self0 := procTicks(k.portcullis.Pid()), procTicks(os.Getpid())
	var decoded0 int64
	for _, c := range clients {
		decoded0 += c.decoded.Load()
	}
	for range fanoutChanges {
		time.Sleep(quietBefore)
		*change++
		i := (*change * 7) % fanoutRoots()
		path := fmt.Sprintf("/fanout-%d-x", *change)
		tw := &tokenWatch{token: []byte(path), acked: make(chan time.Duration, n)}
		for _, c := range clients {
			c.watch.Store(tw)
		}
		tw.start = time.Now()
		if err := k.api.Apply(context.Background(), w.changed(i, path)); err != nil {
			b.Fatal(err)
		}
		acks := make([]time.Duration, 0, n)
		timeout := time.After(5 * time.Minute)
		for len(acks) < n {
			select {
			case d := <-tw.acked:
				acks = append(acks, d)
			case <-timeout:
				for _, c := range clients {
					if err := c.failed(); err != nil {
						b.Fatalf("client %s: %v", c.id, err)
					}
				}
				b.Fatalf("change %s: %d of %d clients ACKed it within 5 minutes", path, len(acks), n)
			}
		}
		slices.Sort(acks)
		r.allACKed = append(r.allACKed, acks[len(acks)-1])
		r.clientACKs = append(r.clientACKs, acks...)
		r.ratios = append(r.ratios, float64(acks[len(acks)-1])/float64(loadgen.Median(acks)))
	}
	cpu1, self1 := procTicks(k.portcullis.Pid()), procTicks(os.Getpid())
	r.cpu += time.Duration(cpu1-cpu0) * 10 * time.Millisecond // USER_HZ = 100
	r.clientCPU += time.Duration(self1-self0) * 10 * time.Millisecond
	r.changes += fanoutChanges
	for _, c := range clients {
		r.decoded += c.decoded.Load()
	}
	r.decoded -= decoded0
	<-profiled
	r.rss = max(r.rss, rss(k.portcullis.Pid(), "VmRSS:"))
	r.peak = max(r.peak, rss(k.portcullis.Pid(), "VmHWM:"))
	for _, c := range clients {
		if err := c.failed(); err != nil {
			b.Fatalf("client %s: %v", c.id, err)
		}
	}
}

// waitClientsReady waits until every client is synced, failing as soon as
// one fails (a stream the server ended).
func waitClientsReady(b *testing.B, clients []*adsClient, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for {
		waiting := 0
		for _, c := range clients {
			if err := c.failed(); err != nil {
				b.Fatalf("client %s: %v", c.id, err)
			}
			select {
			case <-c.readyCh:
			default:
				waiting++
			}
		}
		if waiting == 0 {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d clients not synced within %v", waiting, len(clients), timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// rss reads a size field of /proc/<pid>/status (VmRSS:, VmHWM:) in bytes,
// 0 when it cannot be read.
func rss(pid int, field string) int64 {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func fanoutTable(results map[string]map[int]*fanoutRow, roots, rounds int, idleRSS int64) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "xDS fan-out: N simulated Envoys (ADS clients: CDS, EDS, LDS, RDS, SDS, each response decoded then ACKed) on one portcullis serve, HTTPProxy case at %d roots (%s)\n", roots, workloads[0].describe)
	fmt.Fprintf(&sb, "One HTTPProxy change (one more route) until every client ACKed a response carrying it; %d changes per N and protocol, %d round(s); clients connect %d at a time. portcullis RSS with no client: %d MiB\n",
		fanoutChanges, rounds, connectBatch, idleRSS>>20)
	w := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "N\tADS\tclients synced in\tchange to all ACKed (median)\tmax\tclient ACK (median)\tslowest/median client (median)\tportcullis CPU/change\tbenchmark CPU/change\tdecoded/client/change\tportcullis RSS\tpeak RSS\t")
	clients := fanoutClients()
	for _, n := range clients {
		for _, p := range protocols {
			r := results[p.name][n]
			if r == nil || len(r.allACKed) == 0 {
				continue
			}
			all := slices.Sorted(slices.Values(r.allACKed))
			ratios := slices.Sorted(slices.Values(r.ratios))
			fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\t%.2f\t%s\t%s\t%d KiB\t%d MiB\t%d MiB\t\n", n, p.name, loadgen.Ms(loadgen.Median(r.sync)),
				loadgen.Ms(loadgen.Median(all)), loadgen.Ms(all[len(all)-1]), loadgen.Ms(loadgen.Median(r.clientACKs)),
				ratios[len(ratios)/2], loadgen.Ms(r.cpu/time.Duration(r.changes)), loadgen.Ms(r.clientCPU/time.Duration(r.changes)),
				r.decoded/int64(r.changes*n)>>10, r.rss>>20, r.peak>>20)
		}
	}
	w.Flush()
	n := clients[len(clients)-1]
	fmt.Fprintf(&sb, "targets at N=%d:\n", n)
	for _, p := range protocols {
		r := results[p.name][n]
		if r == nil || len(r.allACKed) == 0 {
			fmt.Fprintf(&sb, "  %s: not measured\n", p.name)
			continue
		}
		med := loadgen.Median(r.allACKed)
		fmt.Fprintf(&sb, "  %s %s: change to all %d clients ACKed %s < %s (at rest, median of %d)\n", verdict(med < targetFanoutACK), p.name, n, loadgen.Ms(med), targetFanoutACK, len(r.allACKed))
		fmt.Fprintf(&sb, "  %s %s: portcullis peak RSS %d MiB < %d MiB\n", verdict(r.peak < targetFanoutRSS), p.name, r.peak>>20, targetFanoutRSS>>20)
	}
	return sb.String()
}

func verdict(ok bool) string {
	if ok {
		return "PASS"
	}
	return "MISS"
}
