// Package controlplane benchmarks the control plane at scale (issue 6): N
// root HTTPProxies, each with TLS, authorization, 5 routes and one
// include, for N = 100, 1,000 and 10,000. It measures the full translate
// (build + translate, in a `portcullis translate` child process, median of
// three runs), that process's peak RSS, and, against the real API server
// and the real Envoy, the initial sync (until Envoy serves every host and
// until every status is written) and the time from applying one HTTPProxy
// change to Envoy serving it, while the first statuses are written (busy)
// and after (at rest).
package controlplane

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/portcullis/portcullis/e2e/harness"
	"github.com/portcullis/portcullis/e2e/loadgen"
)

var scales = benchScales()

// benchScales are the issue's scales, or PORTCULLIS_BENCH_SCALES
// ("1000,10000") while working on one of them.
func benchScales() []int {
	env := os.Getenv("PORTCULLIS_BENCH_SCALES")
	if env == "" {
		return []int{100, 1000, 10000}
	}
	var out []int
	for _, f := range strings.Split(env, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 2 {
			panic("PORTCULLIS_BENCH_SCALES: " + env)
		}
		out = append(out, n)
	}
	return out
}

// Targets at N = 10,000 (issue 6).
const (
	targetTranslate = 2 * time.Second
	targetRSS       = 1 << 30
	targetChange    = time.Second
	translateRuns   = 3
	changeRuns      = 5
)

type row struct {
	n                 int
	pipeline, cliWall time.Duration
	rss               int64
	initial           time.Duration // all objects created -> Envoy serves the last host
	statusSync        time.Duration // all objects created -> every status written
	busy, steady      changes       // changes while the first statuses are written, and after
}

// changes are the figures of changeRuns HTTPProxy changes.
type changes struct {
	change               time.Duration // median, one HTTPProxy change -> Envoy serves it
	changeMin, changeMax time.Duration
	built                time.Duration // median, the change -> portcullis finished the rebuild
	applied              time.Duration // median, the change -> Envoy finished loading the route configuration
}

// BenchmarkControlPlaneScale runs each scale once (b.N is ignored) and
// prints a table with the targets.
func BenchmarkControlPlaneScale(b *testing.B) {
	portcullis := harness.BuildBinary(b, "github.com/portcullis/portcullis/controlplane/cmd/portcullis")
	cert := harness.NewCA(b, "bench").Issue(b, "*.bench.example.com")
	rows := map[int]*row{}
	for _, n := range scales {
		r := &row{n: n}
		rows[n] = r
		dir := writeSet(b, n, cert)
		var runs []translateRun
		for i := 0; i < translateRuns; i++ {
			runs = append(runs, runTranslate(b, portcullis, dir, 2*n+1))
		}
		var pipes, walls []time.Duration
		for _, t := range runs {
			pipes, walls = append(pipes, t.pipeline), append(walls, t.wall)
			r.rss = max(r.rss, t.maxRSS)
		}
		r.pipeline, r.cliWall = loadgen.Median(pipes), loadgen.Median(walls)
		os.RemoveAll(dir)
		b.Logf("translate N=%d: pipeline %v, CLI %v, peak RSS %d MiB", n, r.pipeline, r.cliWall, r.rss>>20)
	}

	k := startStack(b, portcullis)
	ctx := context.Background()
	if err := k.api.Apply(ctx, shared(cert)...); err != nil {
		b.Fatal(err)
	}
	created := 0
	for _, n := range scales {
		r := rows[n]
		start := time.Now()
		createConcurrently(b, k.api.Client, proxies(n)[2*created:])
		created = n
		b.Logf("N=%d: created %d HTTPProxies in %v", n, 2*n, time.Since(start).Round(time.Millisecond))
		start = time.Now()
		waitServed(b, k.httpAddr, host(n-1), "/r0", 10*time.Minute)
		r.initial = time.Since(start)

		// Right after a first sync portcullis writes the status of every
		// new object, and the API server is busy with it: changes then are
		// measured, but the target is for a control plane at rest.
		r.busy = measureChanges(b, k, n, "busy")
		if last := waitStatusesWritten(b, k.admin, 10*time.Minute); !last.IsZero() {
			r.statusSync = last.Sub(start)
		}
		profiled := make(chan struct{})
		if prof := os.Getenv("PORTCULLIS_BENCH_PROFILE"); prof != "" && n == scales[len(scales)-1] {
			// A CPU profile of portcullis during the changes at rest
			// (they take less than its 5 s).
			go func() {
				defer close(profiled)
				saveProfile(b, "http://"+k.admin+"/debug/pprof/profile?seconds=5", prof)
			}()
		} else {
			close(profiled)
		}
		r.steady = measureChanges(b, k, n, "steady")
		<-profiled
		b.Logf("N=%d: Envoy serving all after %v, statuses written after %v; changes busy %v, steady %v", n,
			r.initial.Round(time.Millisecond), r.statusSync.Round(time.Millisecond), r.busy, r.steady)
	}
	fmt.Print("\n" + table(rows))
}

// quietBefore is the pause before each change: longer than portcullis's
// debounce (100ms), so that each is a single edit after a quiet period, not
// part of a burst that portcullis rightly rate-limits.
const quietBefore = 300 * time.Millisecond

// measureChanges applies changeRuns changes, one at a time, each to a
// different root, and times each until Envoy serves it.
func measureChanges(b *testing.B, k *stack, n int, phase string) changes {
	var all, builds, applies []time.Duration
	for c := 0; c < changeRuns; c++ {
		time.Sleep(quietBefore)
		i := (n / 2) + c
		path := fmt.Sprintf("/changed-%d-%s-%d", n, phase, c)
		before, ok := metric(k.admin, "portcullis_translate_seconds_count")
		if !ok {
			b.Fatalf("cannot read portcullis_translate_seconds_count at %s/metrics", k.admin)
		}
		start := time.Now()
		if err := k.api.Apply(context.Background(), root(i, path)); err != nil {
			b.Fatal(err)
		}
		built := make(chan time.Duration, 1)
		go func() { built <- waitBuild(k.admin, before, start) }()
		waitServed(b, k.httpAddr, host(i), path, time.Minute)
		all = append(all, time.Since(start))
		builds = append(builds, <-built)
		applies = append(applies, rdsReloaded(k.envoy).Sub(start))
	}
	slices.Sort(all)
	return changes{change: loadgen.Median(all), changeMin: all[0], changeMax: all[len(all)-1],
		built: loadgen.Median(builds), applied: loadgen.Median(applies)}
}

// waitStatusesWritten returns when portcullis has written no status for
// 3 s, with the time of its last write (zero after timeout).
func waitStatusesWritten(b *testing.B, admin string, timeout time.Duration) time.Time {
	const quiet = 3 * time.Second
	start := time.Now()
	last, _ := metric(admin, "portcullis_status_writes_total")
	lastChange := time.Now()
	for time.Since(start) < timeout {
		time.Sleep(250 * time.Millisecond)
		if w, ok := metric(admin, "portcullis_status_writes_total"); !ok || w != last {
			last, lastChange = w, time.Now()
		} else if time.Since(lastChange) >= quiet {
			return lastChange
		}
	}
	b.Logf("statuses still being written after %v (%v written)", timeout, last)
	return time.Time{}
}

type stack struct {
	api             *harness.APIServer
	envoy           *harness.Envoy
	httpAddr, admin string
}

// rdsReloaded reads when Envoy last finished loading the HTTP listener's
// route configuration (read once per change, after the fact: polling
// Envoy's stats while it works would slow it down).
func rdsReloaded(e *harness.Envoy) time.Time {
	const stat = "http.ingress_http.rds.ingress_http.config_reload_time_ms"
	body, err := e.Admin("/stats?filter=" + url.QueryEscape("^"+regexp.QuoteMeta(stat)+"$"))
	if err != nil {
		return time.Time{}
	}
	v, ok := strings.CutPrefix(strings.TrimSpace(string(body)), stat+": ")
	if !ok {
		return time.Time{}
	}
	ms, _ := strconv.ParseInt(v, 10, 64)
	return time.UnixMilli(ms)
}

// metric reads one of portcullis's counters; ok is false when it cannot.
func metric(admin, name string) (v float64, ok bool) {
	resp, err := http.Get("http://" + admin + "/metrics")
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(body), "\n") {
		if s, found := strings.CutPrefix(line, name+" "); found {
			v, err := strconv.ParseFloat(s, 64)
			return v, err == nil
		}
	}
	return 0, false
}

// waitBuild returns when portcullis has run a build after `before` builds
// (for the table's breakdown: informer + debounce + pipeline).
func waitBuild(admin string, before float64, start time.Time) time.Duration {
	for time.Since(start) < time.Minute {
		if v, ok := metric(admin, "portcullis_translate_seconds_count"); ok && v > before {
			return time.Since(start)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return -1
}

func saveProfile(b *testing.B, url, path string) {
	resp, err := http.Get(url)
	if err != nil {
		b.Logf("profile: %v", err)
		return
	}
	defer resp.Body.Close()
	f, err := os.Create(path)
	if err != nil {
		b.Logf("profile: %v", err)
		return
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		b.Logf("profile: %v", err)
	}
	if err := f.Close(); err != nil {
		b.Logf("profile: %v", err)
	}
}

// startStack runs the API server, portcullis in kubernetes mode and Envoy.
func startStack(b *testing.B, portcullis string) *stack {
	api := harness.StartAPIServer(b, harness.CRDDir(b))
	free := func() string { return fmt.Sprintf("127.0.0.1:%d", harness.FreePort(b)) }
	httpAddr, httpsAddr, xds, admin := free(), free(), free(), free()
	harness.StartProcess(b, "portcullis", portcullis, "serve", "--provider", "kubernetes", "--kubeconfig", api.KubeconfigPath,
		"--xds-address", xds, "--admin-address", admin, "--envoy-http-address", httpAddr, "--envoy-https-address", httpsAddr)
	bootstrap := filepath.Join(b.TempDir(), "envoy.json")
	if out, err := execOutput(portcullis, "bootstrap", "--xds-address", xds, "--envoy-admin-address", free(), "-o", bootstrap); err != nil {
		b.Fatalf("portcullis bootstrap: %v\n%s", err, out)
	}
	envoy := harness.StartEnvoy(b, bootstrap)
	return &stack{api: api, envoy: envoy, httpAddr: httpAddr, admin: admin}
}

// createConcurrently creates objects with several workers: one at a time,
// 20,000 objects would take most of the time budget.
func createConcurrently(b *testing.B, c client.Client, objs []client.Object) {
	const workers = 16
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	next := make(chan client.Object)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for obj := range next {
				if err := c.Create(context.Background(), obj); err != nil {
					select {
					case errs <- fmt.Errorf("create %s: %w", obj.GetName(), err):
					default:
					}
				}
			}
		}()
	}
	for _, o := range objs {
		next <- o
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
}

// waitServed polls Envoy's HTTP listener until the route answers. A TLS
// host's routes redirect to HTTPS there (301); an unknown path is a 404.
// That a route redirects proves Envoy has the new route configuration
// (the HTTP and HTTPS route configurations change in the same update).
func waitServed(b *testing.B, addr, host, path string, timeout time.Duration) {
	c := harness.HTTPClient(addr)
	deadline := time.Now().Add(timeout)
	var last string
	for time.Now().Before(deadline) {
		resp, err := c.Get("http://" + host + path)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusMovedPermanently {
				return
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		time.Sleep(5 * time.Millisecond)
	}
	b.Fatalf("http://%s%s not served within %v (last: %s)", host, path, timeout, last)
}

func table(rows map[int]*row) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "Control plane at scale: N roots (TLS, authorization, %d routes, 1 include each), shared Secret and %d Services\n", routes, services)
	w := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "N\tHTTPProxies\ttranslate (pipeline)\ttranslate CLI wall\tpeak RSS\tinitial sync to Envoy\tall statuses written\t")
	for _, n := range scales {
		r := rows[n]
		fmt.Fprintf(w, "%d\t%d\t%s\t%s\t%d MiB\t%s\t%s\t\n", n, 2*n, loadgen.Ms(r.pipeline), loadgen.Ms(r.cliWall), r.rss>>20,
			loadgen.Ms(r.initial), loadgen.Ms(r.statusSync))
	}
	w.Flush()
	fmt.Fprintf(&sb, "\nOne HTTPProxy change to Envoy serving it (%d changes each; busy: while the first statuses are still written; at rest: after)\n", changeRuns)
	w = tabwriter.NewWriter(&sb, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "N\twhen\tportcullis rebuilt (median)\tEnvoy loaded (median)\tchange to Envoy (median)\tmin\tmax\t")
	for _, n := range scales {
		for _, c := range []struct {
			when string
			c    changes
		}{{"busy", rows[n].busy}, {"at rest", rows[n].steady}} {
			fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t\n", n, c.when, loadgen.Ms(c.c.built), loadgen.Ms(c.c.applied),
				loadgen.Ms(c.c.change), loadgen.Ms(c.c.changeMin), loadgen.Ms(c.c.changeMax))
		}
	}
	w.Flush()
	big := rows[scales[len(scales)-1]]
	verdict := func(ok bool) string {
		if ok {
			return "PASS"
		}
		return "MISS"
	}
	fmt.Fprintf(&sb, "targets at N=%d:\n", big.n)
	fmt.Fprintf(&sb, "  %s full translate %s < %s (median of %d `portcullis translate` runs, build + translate)\n", verdict(big.pipeline < targetTranslate), loadgen.Ms(big.pipeline), targetTranslate, translateRuns)
	fmt.Fprintf(&sb, "  %s peak RSS %d MiB < %d MiB (rusage of the translate process, reading and rendering included)\n", verdict(big.rss < targetRSS), big.rss>>20, targetRSS>>20)
	fmt.Fprintf(&sb, "  %s change to Envoy %s < %s (at rest, median of %d: API server update -> portcullis -> ADS -> Envoy answers the new route)\n", verdict(big.steady.change < targetChange), loadgen.Ms(big.steady.change), targetChange, changeRuns)
	return sb.String()
}
