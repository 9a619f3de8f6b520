// Package controlplane benchmarks the control plane at scale (issue 6): N
// root HTTPProxies, each with TLS, authorization, 5 routes and one
// include, for N = 100, 1,000 and 10,000. It measures the full translate
// (build + translate, in a `portcullis translate` child process, median of
// three runs), that process's peak RSS, and, against the real API server
// and the real Envoy, the time from applying one HTTPProxy change to Envoy
// serving it.
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
	n                    int
	pipeline, cliWall    time.Duration
	rss                  int64
	initial              time.Duration // all objects created -> Envoy serves the last host
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

		var changes, builds, applies []time.Duration
		if prof := os.Getenv("PORTCULLIS_BENCH_PROFILE"); prof != "" && n == scales[len(scales)-1] {
			// A CPU profile of portcullis during the changes.
			go saveProfile(b, "http://"+k.admin+"/debug/pprof/profile?seconds=15", prof)
		}
		for c := 0; c < changeRuns; c++ {
			i := (n / 2) + c
			path := fmt.Sprintf("/changed-%d-%d", n, c)
			p := root(i, path)
			before := translateCount(k.admin)
			start := time.Now()
			if err := k.api.Apply(ctx, p); err != nil {
				b.Fatal(err)
			}
			built := make(chan time.Duration, 1)
			go func() { built <- waitBuild(k.admin, before, start) }()
			waitServed(b, k.httpAddr, host(i), path, time.Minute)
			changes = append(changes, time.Since(start))
			builds = append(builds, <-built)
			applies = append(applies, rdsReloaded(k.envoy).Sub(start))
		}
		slices.Sort(changes)
		r.change, r.changeMin, r.changeMax = loadgen.Median(changes), changes[0], changes[len(changes)-1]
		r.built, r.applied = loadgen.Median(builds), loadgen.Median(applies)
		b.Logf("N=%d: Envoy serving all after %v; changes %v", n, r.initial.Round(time.Millisecond), changes)
	}
	fmt.Print("\n" + table(rows))
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

// translateCount reads how many builds portcullis has run.
func translateCount(admin string) float64 {
	resp, err := http.Get("http://" + admin + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, "portcullis_translate_seconds_count "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return -1
}

// waitBuild returns when portcullis has run a build after `before` builds
// (for the table's breakdown: informer + debounce + pipeline).
func waitBuild(admin string, before float64, start time.Time) time.Duration {
	for time.Since(start) < time.Minute {
		if translateCount(admin) > before {
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
	defer f.Close()
	io.Copy(f, resp.Body)
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
	fmt.Fprintln(w, "N\tHTTPProxies\ttranslate (pipeline)\ttranslate CLI wall\tpeak RSS\tinitial sync to Envoy\tchange: rebuilt\tchange: Envoy loaded\tchange to Envoy (median)\tmin\tmax\t")
	for _, n := range scales {
		r := rows[n]
		fmt.Fprintf(w, "%d\t%d\t%s\t%s\t%d MiB\t%s\t%s\t%s\t%s\t%s\t%s\t\n", n, 2*n, loadgen.Ms(r.pipeline), loadgen.Ms(r.cliWall), r.rss>>20,
			loadgen.Ms(r.initial), loadgen.Ms(r.built), loadgen.Ms(r.applied), loadgen.Ms(r.change), loadgen.Ms(r.changeMin), loadgen.Ms(r.changeMax))
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
	fmt.Fprintf(&sb, "  %s change to Envoy %s < %s (median of %d: API server update -> portcullis -> ADS -> Envoy answers the new route)\n", verdict(big.change < targetChange), loadgen.Ms(big.change), targetChange, changeRuns)
	return sb.String()
}
