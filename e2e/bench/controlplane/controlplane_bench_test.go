// Package controlplane benchmarks the control plane at scale (issue 6), in
// two cases (workloads) for N = 100, 1,000 and 10,000: N root HTTPProxies,
// each with TLS, authorization, 5 routes and one include; and one Gateway
// (HTTP and HTTPS listeners) with N HTTPRoutes of their own hostname and 5
// rules. For each it measures the full translate (build + translate, in a
// `portcullis translate` child process, median of three runs), that
// process's peak RSS, and, against the real API server and the real Envoy
// (a stack of its own per case), the initial sync (until Envoy serves every
// host and until every status is written), the time from applying one
// change (an HTTPProxy or an HTTPRoute with one more route) to Envoy
// serving it, while the first statuses are written (busy) and after (at
// rest), and the peak RSS of `portcullis serve`.
package controlplane

import (
	"context"
	"fmt"
	"io"
	"net"
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

// A workload is one case of the benchmark: the objects of N hosts, and
// the change measured on one of them.
type workload struct {
	name     string // the case column, and the sub-benchmark's name
	describe string // the case, for the table's heading
	// shared are the objects every host uses, created first.
	shared func(cert *harness.KeyPair) []client.Object
	// objects are host i's objects.
	objects func(i int) []client.Object
	// statuses is how many objects of the shared ones and n hosts'
	// portcullis reports a status for (`translate --stats`).
	statuses func(n int) int
	host     func(i int) string
	// probe is a path of every host that Envoy answers with a 301 on the
	// HTTP listener (the initial sync waits for it on the last host; a
	// host Envoy does not serve yet is a 404 there).
	probe string
	// changed is host i's object with one more route, for path, which
	// Envoy answers itself (the Services' addresses are not dialled).
	changed func(i int, path string) client.Object
	// changedOverHTTPS: Envoy serves a changed path over HTTPS (SNI the
	// host's name, the shared Secret's CA) with a 200 whose body is the
	// path, where it answered 404: on the HTTP listener a TLS HTTPProxy
	// host redirects every path, changed or not. Otherwise the changed path
	// is a 301 on the HTTP listener, where it was a 404 (a redirecting
	// rule of an HTTPRoute).
	changedOverHTTPS bool
	// routeConfig names the route configuration a change of host i
	// changes (rdsReloaded).
	routeConfig func(i int) string
	// gatewayAPI: the stack's API server has the Gateway API's CRDs, and
	// Envoy's shared listeners are on 8080 and 8443, the Envoy ports of
	// Gateway listeners on 80 and 443.
	gatewayAPI bool
}

var workloads = []workload{
	{
		name: "HTTPProxy", describe: fmt.Sprintf("N roots (TLS, authorization, %d routes, 1 include each), shared Secret and %d Services", routes, services),
		shared: shared, objects: func(i int) []client.Object { return []client.Object{root(i), child(i)} },
		statuses: func(n int) int { return 2*n + 1 }, // and the ExtensionService
		host:     host, probe: "/r0", changed: func(i int, path string) client.Object { return root(i, path) },
		changedOverHTTPS: true, routeConfig: func(i int) string { return "https/" + host(i) },
	},
	{
		name: "Gateway API", describe: fmt.Sprintf("1 Gateway (HTTP 80, HTTPS 443, shared Secret), N HTTPRoutes (own hostname, %d rules to Services and 1 redirect each), shared Secret and %d Services", routes, services),
		shared: gatewayShared, objects: func(i int) []client.Object { return []client.Object{httpRoute(i)} },
		statuses: func(n int) int { return n + 3 }, // and the GatewayClass, the Gateway, the ExtensionService
		host:     gatewayHost, probe: redirectPath, changed: func(i int, path string) client.Object { return httpRoute(i, path) },
		routeConfig: func(int) string { return "ingress_http" }, gatewayAPI: true,
	},
}

// hostObjects are the objects of hosts [from, to) of w.
func (w workload) hostObjects(from, to int) []client.Object {
	var out []client.Object
	for i := from; i < to; i++ {
		out = append(out, w.objects(i)...)
	}
	return out
}

type row struct {
	n                 int
	objects           int // the hosts' objects (HTTPProxies, HTTPRoutes)
	pipeline, cliWall time.Duration
	rss               int64
	serveRSS          int64         // peak RSS of portcullis serve, after the changes at rest
	initial           time.Duration // all objects created -> Envoy serves the last host
	statusSync        time.Duration // all objects created -> every status written
	busy, steady      changes       // changes while the first statuses are written, and after
}

// changes are the figures of changeRuns HTTPProxy changes.
type changes struct {
	change               time.Duration // median, one HTTPProxy change -> Envoy serves it
	changeMin, changeMax time.Duration
	built                time.Duration // median, the change -> portcullis finished the rebuild
	// applies are the times from each change until Envoy finished loading
	// the route configuration; unread counts the changes whose load time
	// Envoy's stats did not give.
	applies []time.Duration
	unread  int
}

// BenchmarkControlPlaneScale runs each case at each scale once (b.N is
// ignored), one case after the other (each a sub-benchmark, whose stack is
// stopped before the next starts), and prints one table of all with the
// targets.
func BenchmarkControlPlaneScale(b *testing.B) {
	portcullis := harness.BuildBinary(b, "github.com/portcullis/portcullis/controlplane/cmd/portcullis")
	ca := harness.NewCA(b, "bench")
	results := map[string]map[int]*row{}
	for _, w := range workloads {
		b.Run(strings.ReplaceAll(w.name, " ", ""), func(b *testing.B) {
			results[w.name] = runWorkload(b, portcullis, ca, w)
		})
	}
	fmt.Print("\n" + table(results))
}

// runWorkload measures one case at every scale.
func runWorkload(b *testing.B, portcullis string, ca *harness.CA, w workload) map[int]*row {
	cert := ca.Issue(b, "*.bench.example.com")
	rows := map[int]*row{}
	for _, n := range scales {
		r := &row{n: n, objects: len(w.hostObjects(0, n))}
		rows[n] = r
		dir := writeSet(b, w, n, cert)
		var runs []translateRun
		for i := 0; i < translateRuns; i++ {
			runs = append(runs, runTranslate(b, portcullis, dir, w.statuses(n)))
		}
		var pipes, walls []time.Duration
		for _, t := range runs {
			pipes, walls = append(pipes, t.pipeline), append(walls, t.wall)
			r.rss = max(r.rss, t.maxRSS)
		}
		r.pipeline, r.cliWall = loadgen.Median(pipes), loadgen.Median(walls)
		os.RemoveAll(dir)
		b.Logf("%s translate N=%d: pipeline %v, CLI %v, peak RSS %d MiB", w.name, n, r.pipeline, r.cliWall, r.rss>>20)
	}

	k := startStack(b, portcullis, ca.CertPEM, w.gatewayAPI)
	ctx := context.Background()
	if err := k.api.Apply(ctx, w.shared(cert)...); err != nil {
		b.Fatal(err)
	}
	created := 0
	for _, n := range scales {
		r := rows[n]
		start := time.Now()
		createConcurrently(b, k.api.Client, w.hostObjects(created, n))
		created = n
		b.Logf("%s N=%d: created %d objects in %v", w.name, n, r.objects, time.Since(start).Round(time.Millisecond))
		start = time.Now()
		waitAnswer(b, harness.HTTPClient(k.httpAddr), "http://"+w.host(n-1)+w.probe, http.StatusMovedPermanently, "", 10*time.Minute)
		r.initial = time.Since(start)

		// Right after a first sync portcullis writes the status of every
		// new object, and the API server is busy with it: changes then are
		// measured, but the target is for a control plane at rest.
		r.busy = measureChanges(b, k, w, n, "busy")
		if last := waitStatusesWritten(b, k.admin, 10*time.Minute); !last.IsZero() {
			r.statusSync = last.Sub(start)
		}
		profiled := make(chan struct{})
		if prof := os.Getenv("PORTCULLIS_BENCH_PROFILE"); prof != "" && n == scales[len(scales)-1] {
			// A CPU profile of portcullis during the changes at rest
			// (they take less than its 5 s).
			go func() {
				defer close(profiled)
				saveProfile(b, "http://"+k.admin+"/debug/pprof/profile?seconds=5", profilePath(prof, w))
			}()
		} else {
			close(profiled)
		}
		r.steady = measureChanges(b, k, w, n, "steady")
		<-profiled
		r.serveRSS = peakRSS(k.portcullis.Pid())
		b.Logf("%s N=%d: Envoy serving all after %v, statuses written after %v; changes busy %v, steady %v; serve peak RSS %d MiB", w.name, n,
			r.initial.Round(time.Millisecond), r.statusSync.Round(time.Millisecond), r.busy, r.steady, r.serveRSS>>20)
	}
	return rows
}

// profilePath is where the CPU profile of w is saved: PORTCULLIS_BENCH_PROFILE
// for the HTTPProxy case, with the case's name before its extension for the
// others (cpu.pprof, cpu-gatewayapi.pprof).
func profilePath(prof string, w workload) string {
	if !w.gatewayAPI {
		return prof
	}
	ext := filepath.Ext(prof)
	return strings.TrimSuffix(prof, ext) + "-gatewayapi" + ext
}

// peakRSS is the peak resident set of process pid (VmHWM), 0 when it
// cannot be read.
func peakRSS(pid int) int64 {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// quietBefore is the pause before each change: longer than portcullis's
// debounce (100ms), so that each is a single edit after a quiet period, not
// part of a burst that portcullis rightly rate-limits.
const quietBefore = 300 * time.Millisecond

// measureChanges applies changeRuns changes, one at a time, each to a
// different host of w, and times each until Envoy serves it.
func measureChanges(b *testing.B, k *stack, w workload, n int, phase string) changes {
	var all, builds, applies []time.Duration
	unread := 0
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
		all = append(all, time.Since(start))
		builds = append(builds, <-built)
		applies, unread = appendReload(applies, unread, k.envoy, w.routeConfig(i), start)
	}
	slices.Sort(all)
	return changes{change: loadgen.Median(all), changeMin: all[0], changeMax: all[len(all)-1],
		built: loadgen.Median(builds), applies: applies, unread: unread}
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
	api                        *harness.APIServer
	envoy                      *harness.Envoy
	portcullis                 *harness.Process
	httpAddr, httpsAddr, admin string
	// caPEM is the CA of the shared Secret's certificate.
	caPEM []byte
}

// rdsReloaded reads when Envoy last finished loading route configuration
// name (its HTTP connection managers' stat prefix is the name too; read
// once per change, after the fact: polling Envoy's stats while it works
// would slow it down); false when the stat cannot be read.
func rdsReloaded(e *harness.Envoy, name string) (time.Time, bool) {
	stat := "http." + name + ".rds." + name + ".config_reload_time_ms"
	body, err := e.Admin("/stats?filter=" + url.QueryEscape("^"+regexp.QuoteMeta(stat)+"$"))
	if err != nil {
		return time.Time{}, false
	}
	v, ok := strings.CutPrefix(strings.TrimSpace(string(body)), stat+": ")
	if !ok {
		return time.Time{}, false
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	return time.UnixMilli(ms), err == nil && ms > 0
}

// appendReload adds the time from start until Envoy loaded route
// configuration name to applies; a load time Envoy's stats do not give is
// left out (a zero time would print as -9223372036854.775 ms) and counted
// in unread.
func appendReload(applies []time.Duration, unread int, e *harness.Envoy, name string, start time.Time) ([]time.Duration, int) {
	t, ok := rdsReloaded(e, name)
	if !ok {
		return applies, unread + 1
	}
	return append(applies, t.Sub(start)), unread
}

// loadedColumn prints the median of applies, with how many changes had
// no load time to read ("unread" when none had one).
func loadedColumn(applies []time.Duration, unread int) string {
	if len(applies) == 0 {
		return fmt.Sprintf("unread (%d)", unread)
	}
	s := loadgen.Ms(loadgen.Median(slices.Clone(applies)))
	if unread > 0 {
		s += fmt.Sprintf(" (%d unread)", unread)
	}
	return s
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

// startStack runs the API server, portcullis in kubernetes mode and Envoy;
// with gatewayAPI, the API server has the Gateway API's CRDs too and
// Envoy's shared listeners are on ports 8080 and 8443.
func startStack(b *testing.B, portcullis string, caPEM []byte, gatewayAPI bool) *stack {
	free := func() string { return fmt.Sprintf("127.0.0.1:%d", harness.FreePort(b)) }
	crds, httpAddr, httpsAddr := []string{harness.CRDDir(b)}, free(), free()
	if gatewayAPI {
		crds = harness.CRDDirs(b)
		httpAddr, httpsAddr = gatewayListenerAddrs(b)
	}
	api := harness.StartAPIServer(b, crds...)
	xds, admin := free(), free()
	p := harness.StartProcess(b, "portcullis", portcullis, "serve", "--provider", "kubernetes", "--kubeconfig", api.KubeconfigPath,
		"--xds-address", xds, "--admin-address", admin, "--envoy-http-address", httpAddr, "--envoy-https-address", httpsAddr)
	bootstrap := filepath.Join(b.TempDir(), "envoy.json")
	if out, err := execOutput(portcullis, "bootstrap", "--xds-address", xds, "--envoy-admin-address", free(), "-o", bootstrap); err != nil {
		b.Fatalf("portcullis bootstrap: %v\n%s", err, out)
	}
	envoy := harness.StartEnvoy(b, bootstrap)
	return &stack{api: api, envoy: envoy, portcullis: p, httpAddr: httpAddr, httpsAddr: httpsAddr, admin: admin, caPEM: caPEM}
}

// gatewayListenerAddrs are addresses for Envoy's shared HTTP and HTTPS
// listeners on ports 8080 and 8443, where Gateway listeners on 80 and 443
// are served: on the first loopback address 127.0.0.N with both ports free
// (other tests may hold them on 127.0.0.1).
func gatewayListenerAddrs(b *testing.B) (httpAddr, httpsAddr string) {
	for n := 2; n < 255; n++ {
		httpAddr, httpsAddr = fmt.Sprintf("127.0.0.%d:8080", n), fmt.Sprintf("127.0.0.%d:8443", n)
		if portFree(httpAddr) && portFree(httpsAddr) {
			return httpAddr, httpsAddr
		}
	}
	b.Fatal("no loopback address with ports 8080 and 8443 free")
	return "", ""
}

func portFree(addr string) bool {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return false
	}
	l.Close()
	return true
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

// waitServed polls Envoy until it serves host i's changed route for path
// (workload.changedOverHTTPS says how it answers).
func waitServed(b *testing.B, k *stack, w workload, i int, path string, timeout time.Duration) {
	if !w.changedOverHTTPS {
		waitAnswer(b, harness.HTTPClient(k.httpAddr), "http://"+w.host(i)+path, http.StatusMovedPermanently, "", timeout)
		return
	}
	c := harness.HTTPSClient(k.caPEM, k.httpsAddr)
	// One connection for the polls rather than a handshake every 5 ms
	// loading Envoy: a route configuration update applies to the open
	// connections too, and only the new route answers the path.
	c.Transport.(*http.Transport).DisableKeepAlives = false
	defer c.CloseIdleConnections()
	waitAnswer(b, c, "https://"+w.host(i)+path, http.StatusOK, path, timeout)
}

// waitAnswer polls url until Envoy answers it with status (and body,
// unless empty).
func waitAnswer(b *testing.B, c *http.Client, url string, status int, body string, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	var last string
	for time.Now().Before(deadline) {
		resp, err := c.Get(url)
		if err == nil {
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err == nil && resp.StatusCode == status && (body == "" || string(got) == body) {
				return
			}
			last = fmt.Sprintf("%s %.100q", resp.Status, got)
		} else {
			last = err.Error()
		}
		time.Sleep(5 * time.Millisecond)
	}
	b.Fatalf("%s not answered %d within %v (last: %s)", url, status, timeout, last)
}

func table(results map[string]map[int]*row) string {
	var sb strings.Builder
	fmt.Fprintln(&sb, "Control plane at scale, one stack per case:")
	for _, w := range workloads {
		fmt.Fprintf(&sb, "  %s: %s\n", w.name, w.describe)
	}
	w := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "N\tcase\tobjects\ttranslate (pipeline)\ttranslate CLI wall\tpeak RSS\tinitial sync to Envoy\tall statuses written\tserve peak RSS\t")
	for _, n := range scales {
		for _, wl := range workloads {
			if r := results[wl.name][n]; r != nil {
				fmt.Fprintf(w, "%d\t%s\t%d\t%s\t%s\t%d MiB\t%s\t%s\t%d MiB\t\n", n, wl.name, r.objects, loadgen.Ms(r.pipeline), loadgen.Ms(r.cliWall), r.rss>>20,
					loadgen.Ms(r.initial), loadgen.Ms(r.statusSync), r.serveRSS>>20)
			}
		}
	}
	w.Flush()
	fmt.Fprintf(&sb, "\nOne change (an HTTPProxy, an HTTPRoute: one more route) to Envoy serving it (%d changes each; busy: while the first statuses are still written; at rest: after)\n", changeRuns)
	w = tabwriter.NewWriter(&sb, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "N\tcase\twhen\tportcullis rebuilt (median)\tEnvoy loaded (median)\tchange to Envoy (median)\tmin\tmax\t")
	for _, n := range scales {
		for _, wl := range workloads {
			r := results[wl.name][n]
			if r == nil {
				continue
			}
			for _, c := range []struct {
				when string
				c    changes
			}{{"busy", r.busy}, {"at rest", r.steady}} {
				fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", n, wl.name, c.when, loadgen.Ms(c.c.built), loadedColumn(c.c.applies, c.c.unread),
					loadgen.Ms(c.c.change), loadgen.Ms(c.c.changeMin), loadgen.Ms(c.c.changeMax))
			}
		}
	}
	w.Flush()
	verdict := func(ok bool) string {
		if ok {
			return "PASS"
		}
		return "MISS"
	}
	n := scales[len(scales)-1]
	fmt.Fprintf(&sb, "targets at N=%d:\n", n)
	for _, wl := range workloads {
		big := results[wl.name][n]
		if big == nil {
			fmt.Fprintf(&sb, "  %s: not measured (not run, or failed)\n", wl.name)
			continue
		}
		fmt.Fprintf(&sb, "  %s %s: full translate %s < %s (median of %d `portcullis translate` runs, build + translate)\n", verdict(big.pipeline < targetTranslate), wl.name, loadgen.Ms(big.pipeline), targetTranslate, translateRuns)
		fmt.Fprintf(&sb, "  %s %s: peak RSS %d MiB < %d MiB (rusage of the translate process, reading and rendering included)\n", verdict(big.rss < targetRSS), wl.name, big.rss>>20, targetRSS>>20)
		fmt.Fprintf(&sb, "  %s %s: change to Envoy %s < %s (at rest, median of %d: API server update -> portcullis -> ADS -> Envoy answers the new route)\n", verdict(big.steady.change < targetChange), wl.name, loadgen.Ms(big.steady.change), targetChange, changeRuns)
	}
	return sb.String()
}
