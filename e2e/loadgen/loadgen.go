// Package loadgen is a small closed-loop load generator for the benchmarks:
// a fixed number of workers each send a request, wait for its answer, and
// send the next, for a fixed duration. Closed loop means the offered load
// adapts to the server, so requests/s measures capacity and the latency
// percentiles are not inflated by an unbounded queue on the client side.
package loadgen

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// Config says how hard and how long to push.
type Config struct {
	// Concurrency is the number of workers, each with one request in flight.
	Concurrency int
	// Duration is the measured period.
	Duration time.Duration
	// Warmup runs the same load first, unmeasured (connections, caches, JIT-like
	// warmups in the servers).
	Warmup time.Duration
}

func (c Config) withDefaults() Config {
	if c.Concurrency <= 0 {
		c.Concurrency = 16
	}
	if c.Duration <= 0 {
		c.Duration = 5 * time.Second
	}
	return c
}

// Result is what one run measured. Latencies cover successful and failed
// requests alike.
type Result struct {
	Name          string
	Concurrency   int
	Requests      int64
	Errors        int64
	Elapsed       time.Duration
	RPS           float64
	P50, P90, P99 time.Duration
	Max           time.Duration
	FirstError    error
}

// Ratio is r's throughput relative to base's (0 when base measured nothing).
func (r Result) Ratio(base Result) float64 {
	if base.RPS == 0 {
		return 0
	}
	return r.RPS / base.RPS
}

// Do sends one request; worker is the caller's index in [0, Concurrency).
// A non-nil error counts the request as failed.
type Do func(ctx context.Context, worker int) error

// Run pushes load through do and reports what it measured. It stops early
// when ctx ends.
func Run(ctx context.Context, name string, cfg Config, do Do) Result {
	cfg = cfg.withDefaults()
	if cfg.Warmup > 0 {
		// The warmup's requests, failed ones included, are not reported.
		run(ctx, cfg.Concurrency, cfg.Warmup, do)
	}
	m := run(ctx, cfg.Concurrency, cfg.Duration, do)
	lat := m.lat
	r := Result{Name: name, Concurrency: cfg.Concurrency, Requests: int64(len(lat)), Errors: m.errs, Elapsed: m.elapsed, FirstError: m.firstErr}
	if m.elapsed > 0 {
		r.RPS = float64(len(lat)) / m.elapsed.Seconds()
	}
	if len(lat) > 0 {
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		r.P50, r.P90, r.P99 = Percentile(lat, 50), Percentile(lat, 90), Percentile(lat, 99)
		r.Max = lat[len(lat)-1]
	}
	return r
}

// measurement is what one run of the workers measured.
type measurement struct {
	lat      []time.Duration // of the requests that ended within the run, unsorted
	errs     int64           // how many of them failed
	firstErr error           // one of the failures
	elapsed  time.Duration
}

func run(ctx context.Context, workers int, d time.Duration, do Do) measurement {
	ctx, cancel := context.WithTimeout(ctx, d)
	deadline, _ := ctx.Deadline()
	defer cancel()
	type local struct {
		lat  []time.Duration
		errs int64
		err  error
	}
	locals := make([]local, workers)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := &locals[w]
			l.lat = make([]time.Duration, 0, 4096)
			for ctx.Err() == nil {
				t0 := time.Now()
				err := do(ctx, w)
				// The deadline, not only ctx.Err(): on a loaded machine the
				// context's timer fires late, and gRPC already fails calls
				// past the deadline with DeadlineExceeded, in a tight loop.
				if ctx.Err() != nil || !time.Now().Before(deadline) {
					return // in flight when the run ended: neither counted nor an error
				}
				l.lat = append(l.lat, time.Since(t0))
				if err != nil {
					l.errs++
					if l.err == nil {
						l.err = err
					}
				}
			}
		}()
	}
	wg.Wait()
	m := measurement{elapsed: time.Since(start)}
	for _, l := range locals {
		m.lat = append(m.lat, l.lat...)
		m.errs += l.errs
		if m.firstErr == nil {
			m.firstErr = l.err
		}
	}
	return m
}

// Percentile returns the p-th percentile (nearest rank) of sorted durations.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p/100*float64(len(sorted))+0.5) - 1
	i = max(0, min(i, len(sorted)-1))
	return sorted[i]
}

// Median returns the median of xs (which it sorts).
func Median(xs []time.Duration) time.Duration {
	if len(xs) == 0 {
		return 0
	}
	sort.Slice(xs, func(i, j int) bool { return xs[i] < xs[j] })
	if len(xs)%2 == 1 {
		return xs[len(xs)/2]
	}
	return (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
}

// Table prints results side by side with their ratio to a baseline measured
// in the same run, and notes such as targets met or missed.
type Table struct {
	title    string
	baseline string
	rows     []Result
	notes    []string
}

// NewTable starts a table; baseline names the row the ratios refer to.
func NewTable(title, baseline string) *Table { return &Table{title: title, baseline: baseline} }

// Add appends a result row.
func (t *Table) Add(r Result) { t.rows = append(t.rows, r) }

// Note appends a line under the table.
func (t *Table) Note(format string, args ...any) {
	t.notes = append(t.notes, fmt.Sprintf(format, args...))
}

// Target records a goal as PASS or MISS under the table and returns whether it
// was met. It never fails anything: speed goals are reported, not asserted.
func (t *Table) Target(met bool, format string, args ...any) bool {
	verdict := "MISS"
	if met {
		verdict = "PASS"
	}
	t.Note("target %s: %s", verdict, fmt.Sprintf(format, args...))
	return met
}

// Row returns the named result, if added.
func (t *Table) Row(name string) (Result, bool) {
	for _, r := range t.rows {
		if r.Name == name {
			return r, true
		}
	}
	return Result{}, false
}

// String renders the table in Markdown so it can be pasted into notes.
func (t *Table) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n### %s\n\n", t.title)
	b.WriteString("| case | conc | requests | errors | req/s | p50 | p90 | p99 | max | vs baseline |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	base, _ := t.Row(t.baseline)
	for _, r := range t.rows {
		ratio := "baseline"
		if r.Name != t.baseline {
			ratio = fmt.Sprintf("%.2f×", r.Ratio(base))
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %.0f | %s | %s | %s | %s | %s |\n",
			r.Name, r.Concurrency, r.Requests, r.Errors, r.RPS, Ms(r.P50), Ms(r.P90), Ms(r.P99), Ms(r.Max), ratio)
	}
	for _, r := range t.rows {
		if r.FirstError != nil {
			fmt.Fprintf(&b, "\n%s: first error: %v", r.Name, r.FirstError)
		}
	}
	if len(t.notes) > 0 {
		b.WriteString("\n")
		for _, n := range t.notes {
			fmt.Fprintf(&b, "\n- %s", n)
		}
	}
	b.WriteString("\n")
	return b.String()
}

// Ms formats a duration in milliseconds with enough precision for sub-ms
// latencies.
func Ms(d time.Duration) string { return fmt.Sprintf("%.3f ms", float64(d)/float64(time.Millisecond)) }
