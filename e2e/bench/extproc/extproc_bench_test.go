package extproc

import (
	"bufio"
	"bytes"
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
	"sync/atomic"
	"testing"
	"time"

	"github.com/portcullis/portcullis/e2e/harness"
	"github.com/portcullis/portcullis/e2e/loadgen"
)

const concurrency = 16

// rounds of alternating cases; PORTCULLIS_BENCH_ROUNDS overrides.
var rounds = envCount("PORTCULLIS_BENCH_ROUNDS", 5)

// envCount is the positive number in the environment variable name, or def.
func envCount(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// Configurations of the extprocserver processes, one process each so that
// each case's processor CPU is its own. passConfig changes nothing (a
// headers processor without operations): the SDK, the driver, serverkit
// and metrics, and no processor work.
const (
	passConfig = `
processors:
- headers: {}
`
	headersConfig = `
processors:
- headers:
    request:  {set: {x-portcullis-route: "${method} ${path}"}}
    response: {set: {x-request-id: "${request_id}"}}
`
	redactConfig = `
processors:
- jsonRedact:
    request: ["$.password"]
- ndjsonRedact:
    request: ["$.password"]
`
)

// procs, by index in a cpuUse.
const (
	pEnvoy = iota
	pMinimal
	pPass
	pHeaders
	pRedact
	pSelf
)

type benchCase struct {
	name string
	proc int // the case's ext_proc server (index in procs), -1 for none
	do   loadgen.Do
	cfg  loadgen.Config
}

// BenchmarkExtProc measures HTTP requests through the real Envoy to an
// in-process upstream, every case alternating with the others over
// several rounds of one run: Envoy alone, Envoy with a minimal ext_proc
// server on the raw gRPC stubs (the reference), with extprocserver passing
// headers through, with its headers built-in, with buffered JSON redaction
// of a 1 KiB body and with FULL_DUPLEX_STREAMED NDJSON redaction of a 1 MiB
// body. Targets (relative to the minimal server): pass-through at least
// 1.0× its throughput at most 0.85× its CPU per request; the headers
// built-in at least 0.97× and at most 1.0×; under 1 ms added p50 over
// Envoy alone.
//
// PORTCULLIS_BENCH_PROFILE=DIR saves CPU and allocation profiles of the
// pass-through and headers extprocservers under load in DIR (5 s each, or
// PORTCULLIS_BENCH_PROFILE_SECONDS).
func BenchmarkExtProc(b *testing.B) {
	echo := harness.StartEcho(b, "echo")
	sink := startSink(b)
	pprofAddr := func() string { return fmt.Sprintf("127.0.0.1:%d", harness.FreePort(b)) }
	passPprof, headersPprof := pprofAddr(), pprofAddr()
	pass := harness.StartExtProcServer(b, passConfig, "--pprof-address", passPprof)
	headers := harness.StartExtProcServer(b, headersConfig, "--pprof-address", headersPprof)
	redact := harness.StartExtProcServer(b, redactConfig)
	minimal := startMinimal(b)

	mode := func(reqBody, respHeaders string) map[string]any {
		trailers := "SKIP"
		if reqBody == "FULL_DUPLEX_STREAMED" {
			trailers = "SEND" // the filter refuses this mode without it
		}
		return map[string]any{
			"request_header_mode": "SEND", "response_header_mode": respHeaders,
			"request_body_mode": reqBody, "response_body_mode": "NONE",
			"request_trailer_mode": trailers, "response_trailer_mode": "SKIP",
		}
	}
	filter := func(cluster string, m map[string]any) []map[string]any {
		return []map[string]any{harness.ExtProcFilter(cluster, map[string]any{"processing_mode": m, "message_timeout": "2s"})}
	}
	addr := func() string { return fmt.Sprintf("127.0.0.1:%d", harness.FreePort(b)) }
	baseAddr, minimalAddr, passAddr, headersAddr, bufferedAddr, duplexAddr := addr(), addr(), addr(), addr(), addr(), addr()
	toSink := []map[string]any{{"match": map[string]any{"prefix": "/"}, "route": map[string]any{"cluster": "sink"}}}
	envoy := harness.StartEnvoy(b, harness.WriteStaticBootstrap(b, []harness.StaticListener{
		{Name: "baseline", Addr: baseAddr},
		{Name: "minimal", Addr: minimalAddr, HTTPFilters: filter("minimal", mode("NONE", "SEND"))},
		{Name: "pass", Addr: passAddr, HTTPFilters: filter("pass", mode("NONE", "SEND"))},
		{Name: "headers", Addr: headersAddr, HTTPFilters: filter("headers", mode("NONE", "SEND"))},
		{Name: "buffered", Addr: bufferedAddr, HTTPFilters: filter("redact", mode("BUFFERED", "SKIP"))},
		{Name: "duplex", Addr: duplexAddr, HTTPFilters: filter("redact", mode("FULL_DUPLEX_STREAMED", "SKIP")), Routes: toSink},
	}, []harness.StaticCluster{
		{Name: "minimal", Addr: minimal.addr, HTTP2: true},
		{Name: "pass", Addr: pass.Addr, HTTP2: true},
		{Name: "headers", Addr: headers.Addr, HTTP2: true},
		{Name: "redact", Addr: redact.Addr, HTTP2: true},
		{Name: "echo", Addr: echo.Addr},
		{Name: "sink", Addr: sink},
	}))
	procs := []cpuProc{
		pEnvoy: {"envoy", envoy.Pid()}, pMinimal: {"minimal", minimal.Pid()},
		pPass: {"extprocserver pass", pass.Pid()}, pHeaders: {"extprocserver headers", headers.Pid()},
		pRedact: {"extprocserver redact", redact.Pid()}, pSelf: {"loadgen+upstreams", os.Getpid()},
	}

	jsonDoc := jsonBody(1024)
	ndjson := ndjsonBody(1 << 20)
	sinkWant := fmt.Sprintf(`{"lines":%d,"secrets":0}`, bytes.Count(ndjson, []byte("\n")))
	get := func(addr string) loadgen.Do { return client(addr).do(http.MethodGet, nil, "", "", "") }
	ctx := context.Background()

	// Correctness first: a benchmark of a broken path measures nothing.
	for what, do := range map[string]loadgen.Do{
		"minimal":          get(minimalAddr),
		"pass-through":     get(passAddr),
		"headers built-in": client(headersAddr).do(http.MethodGet, nil, "", "", `"X-Portcullis-Route":["GET /api/login"]`),
		"buffered JSON":    client(bufferedAddr).do(http.MethodPost, jsonDoc, "application/json", "", `\"password\":\"[REDACTED]\"`), // in the echo's JSON
		"streamed NDJSON":  client(duplexAddr).do(http.MethodPost, ndjson, "application/x-ndjson", sinkWant, ""),
	} {
		if err := do(ctx, 0); err != nil {
			b.Fatalf("%s through Envoy: %v", what, err)
		}
	}

	cfg := loadgen.Config{Concurrency: concurrency, Duration: 1500 * time.Millisecond, Warmup: 300 * time.Millisecond}
	// 1 MiB bodies: fewer workers and longer rounds, or a round is a
	// handful of requests.
	bigCfg := loadgen.Config{Concurrency: 4, Duration: 3 * time.Second, Warmup: 500 * time.Millisecond}
	cases := []benchCase{
		{"1 Envoy alone", -1, get(baseAddr), cfg},
		{"2 minimal ext_proc (raw stubs)", pMinimal, get(minimalAddr), cfg},
		{"3 extprocserver pass-through", pPass, get(passAddr), cfg},
		{"4 extprocserver headers built-in", pHeaders, get(headersAddr), cfg},
		{"5a buffered JSON redaction, POST 1 KiB", pRedact, client(bufferedAddr).do(http.MethodPost, jsonDoc, "application/json", "", "[REDACTED]"), cfg},
		{"5b full-duplex NDJSON redaction, POST 1 MiB", pRedact, client(duplexAddr).do(http.MethodPost, ndjson, "application/x-ndjson", sinkWant, ""), bigCfg},
	}
	res := alternate(ctx, procs, cases)

	// Added latency is measured with one worker: at 16 workers on a
	// saturated machine p50 is mostly queueing (workers / throughput).
	one := loadgen.Config{Concurrency: 1, Duration: time.Second, Warmup: 200 * time.Millisecond}
	var latCases []benchCase
	for _, c := range cases[:4] {
		c.name, c.cfg = c.name+", 1 worker", one
		latCases = append(latCases, c)
	}
	lat := alternate(ctx, procs, latCases)

	fmt.Print(render(cases, res, lat))
	if dir := os.Getenv("PORTCULLIS_BENCH_PROFILE"); dir != "" {
		for _, p := range []struct{ name, pprof, addr string }{{"pass", passPprof, passAddr}, {"headers", headersPprof, headersAddr}} {
			if err := profile(ctx, dir, "extprocserver-"+p.name, p.pprof, get(p.addr), cfg); err != nil {
				b.Errorf("profiling %s: %v", p.name, err)
			}
		}
	}
}

// measured is one round of one case.
type measured struct {
	r   loadgen.Result
	use cpuUse
}

// alternate runs every case in turn, rounds times, so that other work on
// the shared machine hits them alike; it returns each case's rounds.
func alternate(ctx context.Context, procs []cpuProc, cases []benchCase) [][]measured {
	all := make([][]measured, len(cases))
	for range rounds {
		for i, c := range cases {
			r, use := measureCPU(procs, func(do loadgen.Do) loadgen.Result { return loadgen.Run(ctx, c.name, c.cfg, do) }, c.do)
			all[i] = append(all[i], measured{r, use})
		}
	}
	return all
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	xs = slices.Clone(xs)
	slices.Sort(xs)
	if len(xs)%2 == 1 {
		return xs[len(xs)/2]
	}
	return (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
}

// stat is the median over rounds of f, and the median of its per-round
// ratio to the same figure of ref (the same round: the closest in time).
func stat(rs, ref []measured, f func(measured) float64) (value, ratio float64) {
	var vs, ratios []float64
	for i, m := range rs {
		vs = append(vs, f(m))
		if i < len(ref) && f(ref[i]) > 0 {
			ratios = append(ratios, f(m)/f(ref[i]))
		}
	}
	return median(vs), median(ratios)
}

func ms(v float64) string { return loadgen.Ms(time.Duration(v)) }

// render prints the table: medians over the rounds, and beside each figure
// the median of its per-round ratio to case 2 (the minimal server).
func render(cases []benchCase, res, lat [][]measured) string {
	var b strings.Builder
	ref := res[1]
	fmt.Fprintf(&b, "\n### ext_proc through Envoy (HTTP/1.1 keep-alive, echo upstream; medians of %d alternating rounds; ×2: median per-round ratio to case 2)\n\n", rounds)
	b.WriteString("| case | workers | req/s | ×2 | p50 | ×2 | p99 | ×2 | Envoy CPU/req | ×2 | processor CPU/req | ×2 | loadgen+upstreams CPU/req | errors |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	rps := func(m measured) float64 { return m.r.RPS }
	p50 := func(m measured) float64 { return float64(m.r.P50) }
	p99 := func(m measured) float64 { return float64(m.r.P99) }
	cpuOf := func(p int) func(measured) float64 { return func(m measured) float64 { return m.use.us[p] } }
	// The processor column compares each case's server with the minimal one.
	procOf := func(c benchCase) func(measured) float64 {
		return func(m measured) float64 {
			if c.proc < 0 {
				return 0
			}
			return m.use.us[c.proc]
		}
	}
	ratios := map[string]map[string]float64{}
	for i, c := range cases {
		var errs int64
		for _, m := range res[i] {
			errs += m.r.Errors
		}
		r, rr := stat(res[i], ref, rps)
		l50, l50r := stat(res[i], ref, p50)
		l99, l99r := stat(res[i], ref, p99)
		e, er := stat(res[i], ref, cpuOf(pEnvoy))
		pv, _ := stat(res[i], nil, procOf(c))
		var pr float64
		if c.proc >= 0 {
			// Against the minimal server's CPU in case 2's same round.
			var rs []float64
			for j, m := range res[i] {
				if j < len(ref) && ref[j].use.us[pMinimal] > 0 {
					rs = append(rs, m.use.us[c.proc]/ref[j].use.us[pMinimal])
				}
			}
			pr = median(rs)
		}
		s, _ := stat(res[i], nil, cpuOf(pSelf))
		ratios[c.name] = map[string]float64{"rps": rr, "cpu": pr}
		proc, procRatio := "–", "–"
		if c.proc >= 0 {
			proc, procRatio = fmt.Sprintf("%.0f µs", pv), fmt.Sprintf("%.2f", pr)
		}
		fmt.Fprintf(&b, "| %s | %d | %.0f | %.2f | %s | %.2f | %s | %.2f | %.0f µs | %.2f | %s | %s | %.0f µs | %d |\n",
			c.name, c.cfg.Concurrency, r, rr, ms(l50), l50r, ms(l99), l99r, e, er, proc, procRatio, s, errs)
	}
	for i, c := range cases {
		for _, m := range res[i] {
			if m.r.FirstError != nil {
				fmt.Fprintf(&b, "\n%s: first error: %v\n", c.name, m.r.FirstError)
				break
			}
		}
	}

	b.WriteString("\nOne worker (latency without queueing):\n\n| case | req/s | p50 | p99 | p50 added to case 1 |\n|---|---:|---:|---:|---:|\n")
	added := map[int]float64{}
	for i, c := range cases[:len(lat)] {
		var adds []float64
		for j, m := range lat[i] {
			adds = append(adds, float64(m.r.P50-lat[0][j].r.P50))
		}
		added[i] = median(adds)
		r, _ := stat(lat[i], nil, rps)
		l50, _ := stat(lat[i], nil, p50)
		l99, _ := stat(lat[i], nil, p99)
		fmt.Fprintf(&b, "| %s | %.0f | %s | %s | %s |\n", c.name, r, ms(l50), ms(l99), ms(added[i]))
	}
	big := res[len(res)-1]
	mibps, _ := stat(big, nil, func(m measured) float64 { return m.r.RPS })

	b.WriteString("\n")
	target := func(met bool, format string, args ...any) {
		verdict := "MISS"
		if met {
			verdict = "PASS"
		}
		fmt.Fprintf(&b, "- target %s: %s\n", verdict, fmt.Sprintf(format, args...))
	}
	pass, hdr := ratios[cases[2].name], ratios[cases[3].name]
	target(pass["rps"] >= 1.0, "pass-through throughput >= 1.00× the minimal server's (%.2f×)", pass["rps"])
	target(pass["cpu"] <= 0.85, "pass-through server CPU per request <= 0.85× the minimal server's (%.2f×)", pass["cpu"])
	target(hdr["rps"] >= 0.97, "headers built-in throughput >= 0.97× the minimal server's (%.2f×)", hdr["rps"])
	target(hdr["cpu"] <= 1.0, "headers built-in server CPU per request <= 1.00× the minimal server's (%.2f×)", hdr["cpu"])
	for i := 1; i < len(lat); i++ {
		target(added[i] < float64(time.Millisecond), "%s adds < 1 ms to p50 over Envoy alone, 1 worker (%s)", strings.TrimSuffix(cases[i].name, ", 1 worker"), ms(added[i]))
	}
	fmt.Fprintf(&b, "- streamed redaction: %.1f MiB/s of request body through Envoy and the processor (%d workers)\n", mibps, cases[len(cases)-1].cfg.Concurrency)
	var cpuRows []string
	for i, c := range cases {
		other, _ := stat(res[i], nil, func(m measured) float64 { return m.use.other })
		cpuRows = append(cpuRows, fmt.Sprintf("%s %.0f µs", strings.SplitN(c.name, " ", 2)[0], other))
	}
	b.WriteString("- CPU per request: utime+stime of each process over the round (warm-up included) divided by its requests; other work on the machine, by case: " + strings.Join(cpuRows, ", ") + "\n")
	b.WriteString("- shared, noisy machine: compare ratios within this run, not absolute figures\n")
	return b.String()
}

// profile saves a CPU profile and an allocation profile of an
// extprocserver (its --pprof-address) while load runs through it.
func profile(ctx context.Context, dir, name, pprofAddr string, do loadgen.Do, cfg loadgen.Config) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	fetch := func(path, file string) error {
		resp, err := http.Get("http://" + pprofAddr + path)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("%s: status %d", path, resp.StatusCode)
		}
		f, err := os.Create(filepath.Join(dir, file))
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(f, resp.Body)
		return err
	}
	seconds := envCount("PORTCULLIS_BENCH_PROFILE_SECONDS", 5)
	cfg.Duration, cfg.Warmup = time.Duration(seconds)*time.Second+time.Second, 0
	done := make(chan loadgen.Result, 1)
	go func() { done <- loadgen.Run(ctx, name, cfg, do) }()
	time.Sleep(500 * time.Millisecond)
	err := fetch(fmt.Sprintf("/debug/pprof/profile?seconds=%d", seconds), name+".cpu.pprof")
	if err == nil {
		err = fetch("/debug/pprof/allocs", name+".allocs.pprof")
	}
	r := <-done
	fmt.Printf("profiled %s at %.0f req/s: %s/%s.{cpu,allocs}.pprof\n", name, r.RPS, dir, name)
	return err
}

// minimalServer is the reference ext_proc server (./minimal).
type minimalServer struct {
	*harness.Process
	addr string
}

func startMinimal(b *testing.B) minimalServer {
	bin := harness.BuildBinary(b, "github.com/portcullis/portcullis/e2e/bench/extproc/minimal")
	addr := fmt.Sprintf("127.0.0.1:%d", harness.FreePort(b))
	p := harness.StartProcess(b, "minimal", bin, "--address", addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := harness.WaitTCP(ctx, addr); err != nil {
		b.Fatalf("minimal ext_proc server: %v\n%s", err, p.Logs())
	}
	return minimalServer{p, addr}
}

// startSink starts the upstream of the streamed case: it reads an NDJSON
// body and answers how many lines came and how many still had the secret.
func startSink(b *testing.B) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var lines, secrets int
		sc := bufio.NewScanner(r.Body)
		for sc.Scan() {
			lines++
			if bytes.Contains(sc.Bytes(), []byte("hunter2")) {
				secrets++
			}
		}
		if sc.Err() != nil {
			http.Error(w, sc.Err().Error(), http.StatusBadRequest)
			return
		}
		fmt.Fprintf(w, `{"lines":%d,"secrets":%d}`, lines, secrets)
	})}
	go func() { _ = srv.Serve(l) }() // returns when the cleanup closes it
	b.Cleanup(func() { srv.Close() })
	return l.Addr().String()
}

type httpClient struct{ c *http.Client }

// client keeps connections to Envoy alive, one idle connection per worker.
func client(addr string) httpClient {
	d := &net.Dialer{Timeout: 5 * time.Second}
	return httpClient{&http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, addr)
		},
		MaxIdleConns:        concurrency * 2,
		MaxIdleConnsPerHost: concurrency * 2,
		IdleConnTimeout:     time.Minute,
	}}}
}

// do sends one request per call and checks a 200 whose body is exactly
// want (if set) and contains needle (if set).
func (h httpClient) do(method string, body []byte, contentType, want, needle string) loadgen.Do {
	return func(ctx context.Context, _ int) error {
		var rd io.Reader
		if body != nil {
			rd = bytes.NewReader(body)
		}
		req, err := http.NewRequestWithContext(ctx, method, "http://bench.example/api/login", rd)
		if err != nil {
			return err
		}
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		resp, err := h.c.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		got, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d: %.200s", resp.StatusCode, got)
		}
		if want != "" && string(got) != want {
			return fmt.Errorf("answer %.300s, want %s", got, want)
		}
		if needle != "" && !strings.Contains(string(got), needle) {
			return fmt.Errorf("answer lacks %s: %.300s", needle, got)
		}
		return nil
	}
}

// jsonBody is a JSON login document of exactly n bytes with a password.
func jsonBody(n int) []byte {
	head, tail := `{"user":"bench","password":"hunter2","padding":"`, `"}`
	return []byte(head + strings.Repeat("x", n-len(head)-len(tail)) + tail)
}

// ndjsonBody is n bytes of NDJSON, 128-byte lines each with a password.
func ndjsonBody(n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		head := fmt.Sprintf(`{"n":%d,"password":"hunter2","pad":"`, i)
		b.WriteString(head + strings.Repeat("x", 128-len(head)-3) + "\"}\n")
	}
	return b.Bytes()[:n]
}

type cpuProc struct {
	name string
	pid  int
}

// cpuUse is the CPU time per request of each process (in the order of
// procs) and of the rest of the machine, in µs.
type cpuUse struct {
	us    []float64
	other float64
}

// measureCPU runs one case (run with do, counted) and measures the CPU
// time per request that each process and the rest of the machine (other
// work) used meanwhile, warmup included in both the time and the request
// count.
func measureCPU(procs []cpuProc, run func(loadgen.Do) loadgen.Result, do loadgen.Do) (loadgen.Result, cpuUse) {
	var n atomic.Int64
	counted := func(ctx context.Context, w int) error { n.Add(1); return do(ctx, w) }
	before := make([]int64, len(procs))
	for i, p := range procs {
		before[i] = procTicks(p.pid)
	}
	busy0 := machineBusyTicks()
	r := run(counted)
	busy := machineBusyTicks() - busy0
	reqs := max(n.Load(), 1)
	// Clock ticks are 10 ms (USER_HZ 100 on Linux).
	us := func(ticks int64) float64 { return float64(ticks) * 10_000 / float64(reqs) }
	var use cpuUse
	var ours int64
	for i, p := range procs {
		d := procTicks(p.pid) - before[i]
		ours += d
		use.us = append(use.us, us(d))
	}
	use.other = us(max(busy-ours, 0))
	return r, use
}

// procTicks is utime+stime of pid from /proc/<pid>/stat; -1 on error.
func procTicks(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	// Fields after the command name, which is in parentheses: utime and
	// stime are fields 14 and 15 of the line, 12 and 13 after ")".
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return -1
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return u + st
}

// machineBusyTicks is the non-idle CPU time of the whole machine.
func machineBusyTicks() int64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	var busy int64
	for i, f := range strings.Fields(line)[1:] {
		v, _ := strconv.ParseInt(f, 10, 64)
		if i != 3 && i != 4 { // idle, iowait
			busy += v
		}
	}
	return busy
}
