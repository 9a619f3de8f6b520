package controlplane

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"google.golang.org/grpc"

	"github.com/portcullis/portcullis/e2e/harness"
	"github.com/portcullis/portcullis/e2e/loadgen"
	"github.com/portcullis/portcullis/extension/sdk"
)

// The extension variants of BenchmarkControlPlaneExtension: the same
// HTTPProxy case, at rest, with no extension (the baseline), and with a
// pass-through extension (sdk.Server{}) subscribed to the typical hooks,
// and to those and PostTranslateModify (the whole configuration on every
// rebuild).
type extVariant struct {
	name  string
	hooks []string // none: no extension registered
}

var extVariants = []extVariant{
	{name: "none"},
	{name: "(a) typical", hooks: []string{"PostTranslateInsert", "PostVirtualHostModify", "PostHTTPListenerModify"}},
	{name: "(b) typical + PostTranslateModify", hooks: []string{"PostTranslateInsert", "PostVirtualHostModify", "PostHTTPListenerModify", "PostTranslateModify"}},
}

// targetExtRatio: with a pass-through extension (the typical hooks), a
// change to Envoy at rest within 1.3x of no extension, in the same run.
const targetExtRatio = 1.3

// extRounds is how many times each variant is measured, alternating
// (PORTCULLIS_BENCH_ROUNDS; 2 by default).
func extRounds() int {
	if n, err := strconv.Atoi(os.Getenv("PORTCULLIS_BENCH_ROUNDS")); err == nil && n > 0 {
		return n
	}
	return 2
}

// extRow is one variant at one scale, over every round.
type extRow struct {
	changes  []time.Duration // each change to Envoy
	builds   []time.Duration
	applies  []time.Duration
	unread   int              // changes whose load time Envoy's stats did not give
	rebuilds float64          // portcullis rebuilds (translate count) during the changes
	cpu      time.Duration    // portcullis CPU during the changes
	calls    map[string]int64 // hook -> calls the extension received during the changes
	outcomes map[string]float64
	// outcomes: "hook/outcome" -> portcullis_extension_hook_calls_total during the changes
}

// callCounter counts the calls of each hook the extension receives.
type callCounter struct {
	mu sync.Mutex
	n  map[string]int64
}

func (c *callCounter) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	hook := info.FullMethod[strings.LastIndexByte(info.FullMethod, '/')+1:]
	c.mu.Lock()
	c.n[hook]++
	c.mu.Unlock()
	return h(ctx, req)
}

func (c *callCounter) snapshot() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int64, len(c.n))
	for k, v := range c.n {
		out[k] = v
	}
	return out
}

// BenchmarkControlPlaneExtension measures a change to Envoy at rest in the
// HTTPProxy case with and without a pass-through extension, in one run:
// one API server and Envoy, the objects created once per scale, and
// portcullis restarted for each variant (the same xDS and admin addresses,
// a configuration file of its own), the variants alternating over
// extRounds rounds. The extension runs in this process (sdk.Serve on a
// loopback listener), with a gRPC interceptor counting its calls.
func BenchmarkControlPlaneExtension(b *testing.B) {
	portcullis := harness.BuildBinary(b, "github.com/portcullis/portcullis/controlplane/cmd/portcullis")
	ca := harness.NewCA(b, "bench")
	cert := ca.Issue(b, "*.bench.example.com")
	w := workloads[0] // HTTPProxy

	counter := &callCounter{n: map[string]int64{}}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- sdk.Serve(ctx, lis, &sdk.Server{}, grpc.ChainUnaryInterceptor(counter.intercept),
			grpc.MaxRecvMsgSize(1<<30), grpc.MaxSendMsgSize(1<<30))
	}()
	b.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			b.Errorf("extension server: %v", err)
		}
	})

	dir := b.TempDir()
	configs := map[string]string{}
	for i, v := range extVariants {
		var sb strings.Builder
		if len(v.hooks) == 0 {
			sb.WriteString("extensions: []\n")
		} else {
			// Generous limits: the whole configuration at 10,000 roots is
			// tens of MB, and the figures are of what it costs, not of
			// a failure.
			fmt.Fprintf(&sb, "extensions:\n- name: passthrough\n  address: %s\n  hooks: [%s]\n  timeout: 30s\n  phaseBudget: 60s\n  maxMessageSize: %d\n",
				lis.Addr(), strings.Join(v.hooks, ", "), 1<<30)
		}
		path := filepath.Join(dir, fmt.Sprintf("portcullis-%d.yaml", i))
		if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
			b.Fatal(err)
		}
		configs[v.name] = path
	}

	k := startStack(b, portcullis, ca.CertPEM, false)
	// portcullis is started again for each variant, on the same addresses.
	args := slices.Clone(k.portcullis.Args)
	k.portcullis.Stop()
	if err := k.api.Apply(context.Background(), w.shared(cert)...); err != nil {
		b.Fatal(err)
	}

	results := map[int]map[string]*extRow{}
	created := 0
	rounds := extRounds()
	for _, n := range scales {
		results[n] = map[string]*extRow{}
		for _, v := range extVariants {
			results[n][v.name] = &extRow{calls: map[string]int64{}, outcomes: map[string]float64{}}
		}
		start := time.Now()
		createConcurrently(b, k.api.Client, w.hostObjects(created, n))
		created = n
		b.Logf("N=%d: created %d objects in %v", n, len(w.hostObjects(0, n)), time.Since(start).Round(time.Millisecond))
		for round := 0; round < rounds; round++ {
			for vi, v := range extVariants {
				p := harness.NewProcess(b, "portcullis", portcullis, append(slices.Clone(args), "--config", configs[v.name])...)
				p.Start()
				k.portcullis = p
				waitReady(b, k.admin)
				// A first change, not measured: Envoy has reconnected and
				// has this portcullis's configuration.
				i := n/2 - 1
				warm := fmt.Sprintf("/warm-%d-%d-%d", n, round, vi)
				if err := k.api.Apply(context.Background(), w.changed(i, warm)); err != nil {
					b.Fatal(err)
				}
				waitServed(b, k, w, i, warm, 5*time.Minute)
				// At rest: the first statuses (on a fresh API server) or
				// the warm-up's are written.
				waitStatusesWritten(b, k.admin, 10*time.Minute)

				r := results[n][v.name]
				calls0, out0 := counter.snapshot(), hookOutcomes(k.admin)
				builds0, _ := metric(k.admin, "portcullis_translate_seconds_count")
				cpu0 := procTicks(p.Pid())
				profiled := make(chan struct{})
				if prof := os.Getenv("PORTCULLIS_BENCH_PROFILE"); prof != "" && round == 0 && n == scales[len(scales)-1] {
					go func() {
						defer close(profiled)
						saveProfile(b, "http://"+k.admin+"/debug/pprof/profile?seconds=5", extProfilePath(prof, vi))
					}()
				} else {
					close(profiled)
				}
				c := measureChangesAll(b, k, w, n, fmt.Sprintf("ext-%d-%d", round, vi))
				cpu1 := procTicks(p.Pid())
				builds1, _ := metric(k.admin, "portcullis_translate_seconds_count")
				calls1, out1 := counter.snapshot(), hookOutcomes(k.admin)
				<-profiled
				r.changes = append(r.changes, c.all...)
				r.builds = append(r.builds, c.builds...)
				r.applies = append(r.applies, c.applies...)
				r.unread += c.unread
				r.rebuilds += builds1 - builds0
				r.cpu += time.Duration(cpu1-cpu0) * 10 * time.Millisecond // USER_HZ = 100
				for h, v := range calls1 {
					r.calls[h] += v - calls0[h]
				}
				for s, v := range out1 {
					r.outcomes[s] += v - out0[s]
				}
				b.Logf("N=%d round %d %s: changes %v", n, round, v.name, c.all)
				p.Stop()
			}
		}
	}
	fmt.Print("\n" + extTable(results, rounds))
}

// extProfilePath is PORTCULLIS_BENCH_PROFILE with "-ext<variant>" before
// its extension.
func extProfilePath(prof string, variant int) string {
	ext := filepath.Ext(prof)
	return fmt.Sprintf("%s-ext%d%s", strings.TrimSuffix(prof, ext), variant, ext)
}

// allChanges are every change of one measureChangesAll.
type allChanges struct {
	all, builds, applies []time.Duration
	unread               int
}

// measureChangesAll is measureChanges keeping each change's figures, to
// take medians over rounds.
func measureChangesAll(b *testing.B, k *stack, w workload, n int, phase string) allChanges {
	var out allChanges
	for c := 0; c < changeRuns; c++ {
		time.Sleep(quietBefore)
		i := (n / 2) + c
		path := fmt.Sprintf("/changed-%d-%s-%d", n, phase, c)
		before, ok := metric(k.admin, "portcullis_translate_seconds_count")
		if !ok {
			b.Fatalf("cannot read portcullis_translate_seconds_count at %s/metrics", k.admin)
		}
		start := time.Now()
		if err := k.api.Apply(context.Background(), w.changed(i, path)); err != nil {
			b.Fatal(err)
		}
		built := make(chan time.Duration, 1)
		go func() { built <- waitBuild(k.admin, before, start) }()
		waitServed(b, k, w, i, path, time.Minute)
		out.all = append(out.all, time.Since(start))
		out.builds = append(out.builds, <-built)
		out.applies, out.unread = appendReload(out.applies, out.unread, k.envoy, w.routeConfig(i), start)
	}
	return out
}

// waitReady waits for portcullis's first build.
func waitReady(b *testing.B, admin string) {
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		if v, ok := metric(admin, "portcullis_translate_seconds_count"); ok && v >= 1 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.Fatalf("portcullis at %s: no build within 5 minutes", admin)
}

// hookOutcomes reads portcullis_extension_hook_calls_total by
// "hook/outcome".
func hookOutcomes(admin string) map[string]float64 {
	out := map[string]float64{}
	resp, err := http.Get("http://" + admin + "/metrics")
	if err != nil {
		return out
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		labels, ok := strings.CutPrefix(line, "portcullis_extension_hook_calls_total{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(labels, "} ")
		if !ok {
			continue
		}
		var hook, outcome string
		for _, l := range strings.Split(labels, ",") {
			k, v, _ := strings.Cut(l, "=")
			v = strings.Trim(v, `"`)
			switch k {
			case "hook":
				hook = v
			case "outcome":
				outcome = v
			}
		}
		f, err := strconv.ParseFloat(value, 64)
		if err == nil {
			out[hook+"/"+outcome] += f
		}
	}
	return out
}

// procTicks is utime+stime of pid from /proc/<pid>/stat (clock ticks),
// 0 when it cannot be read.
func procTicks(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return u + st
}

func extTable(results map[int]map[string]*extRow, rounds int) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "Control plane with a pass-through extension (sdk.Server{}, in the benchmark's process, loopback gRPC): HTTPProxy case, %s\n", workloads[0].describe)
	fmt.Fprintf(&sb, "One HTTPProxy change to Envoy serving it, at rest; one API server and Envoy, portcullis restarted per variant, variants alternating over %d rounds of %d changes (medians of %d)\n", rounds, changeRuns, rounds*changeRuns)
	w := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "N\textension hooks\tportcullis rebuilt (median)\tEnvoy loaded (median)\tchange to Envoy (median)\t× none\tmin\tmax\trebuilds/change\tportcullis CPU/change\t")
	for _, n := range scales {
		base := loadgen.Median(results[n]["none"].changes)
		for _, v := range extVariants {
			r := results[n][v.name]
			if len(r.changes) == 0 {
				continue
			}
			all := slices.Sorted(slices.Values(r.changes))
			med := loadgen.Median(all)
			nc := float64(len(all))
			fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%.2f\t%s\t%s\t%.1f\t%s\t\n", n, v.name, loadgen.Ms(loadgen.Median(r.builds)), loadedColumn(r.applies, r.unread),
				loadgen.Ms(med), float64(med)/float64(base), loadgen.Ms(all[0]), loadgen.Ms(all[len(all)-1]), r.rebuilds/nc, loadgen.Ms(time.Duration(float64(r.cpu)/nc)))
		}
	}
	w.Flush()

	fmt.Fprintln(&sb, "\nHook calls per change (at rest; received: the extension's interceptor; ok, cached, failed: portcullis_extension_hook_calls_total by outcome)")
	w = tabwriter.NewWriter(&sb, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "N\textension hooks\thook\treceived/change\tok/change\tcached/change\tfailed/change\t")
	for _, n := range scales {
		for _, v := range extVariants {
			r := results[n][v.name]
			nc := float64(len(r.changes))
			if len(v.hooks) == 0 || nc == 0 {
				continue
			}
			for _, h := range v.hooks {
				failed := r.outcomes[h+"/error"] + r.outcomes[h+"/timeout"] + r.outcomes[h+"/invalid"]
				fmt.Fprintf(w, "%d\t%s\t%s\t%.1f\t%.1f\t%.1f\t%.1f\t\n", n, v.name, h, float64(r.calls[h])/nc,
					r.outcomes[h+"/ok"]/nc, r.outcomes[h+"/cached"]/nc, failed/nc)
			}
		}
	}
	w.Flush()

	n := scales[len(scales)-1]
	base := loadgen.Median(results[n]["none"].changes)
	fmt.Fprintf(&sb, "targets at N=%d:\n", n)
	for _, v := range extVariants[1:] {
		r := results[n][v.name]
		if len(r.changes) == 0 || base == 0 {
			fmt.Fprintf(&sb, "  %s: not measured\n", v.name)
			continue
		}
		med := loadgen.Median(r.changes)
		ratio := float64(med) / float64(base)
		verdict := "MISS"
		if ratio <= targetExtRatio {
			verdict = "PASS"
		}
		fmt.Fprintf(&sb, "  %s %s: change to Envoy %s = %.2f× no extension (%s, same run) ≤ %.1f×\n", verdict, v.name, loadgen.Ms(med), ratio, loadgen.Ms(base), targetExtRatio)
	}
	return sb.String()
}
