package loadgen

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestRunCountsRequestsAndErrors(t *testing.T) {
	var calls atomic.Int64
	boom := errors.New("boom")
	r := Run(context.Background(), "case", Config{Concurrency: 4, Duration: 200 * time.Millisecond}, func(ctx context.Context, w int) error {
		if w < 0 || w >= 4 {
			t.Errorf("worker index %d out of range", w)
		}
		n := calls.Add(1)
		time.Sleep(time.Millisecond)
		if n%10 == 0 {
			return boom
		}
		return nil
	})
	if r.Requests == 0 || r.Requests > calls.Load() {
		t.Fatalf("requests = %d, calls = %d", r.Requests, calls.Load())
	}
	if r.Errors == 0 || !errors.Is(r.FirstError, boom) {
		t.Fatalf("errors = %d, first = %v; want some boom errors", r.Errors, r.FirstError)
	}
	if r.RPS <= 0 || r.P50 < time.Millisecond || r.P99 < r.P50 || r.Max < r.P99 {
		t.Fatalf("implausible figures: %+v", r)
	}
}

func TestRunWarmupIsNotMeasured(t *testing.T) {
	var calls atomic.Int64
	r := Run(context.Background(), "w", Config{Concurrency: 1, Duration: 50 * time.Millisecond, Warmup: 50 * time.Millisecond}, func(context.Context, int) error {
		calls.Add(1)
		time.Sleep(time.Millisecond)
		return nil
	})
	if r.Requests >= calls.Load() {
		t.Fatalf("requests %d should exclude the warmup (total calls %d)", r.Requests, calls.Load())
	}
}

func TestPercentileAndMedian(t *testing.T) {
	var xs []time.Duration
	for i := 1; i <= 100; i++ {
		xs = append(xs, time.Duration(i))
	}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{50, 50}, {90, 90}, {99, 99}, {100, 100}, {0, 1}} {
		if got := Percentile(xs, c.p); got != c.want {
			t.Errorf("Percentile(%v) = %v, want %v", c.p, got, c.want)
		}
	}
	if got := Median([]time.Duration{5, 1, 3, 2}); got != 2 {
		t.Errorf("Median = %v, want 2 (mean of 2 and 3, integer)", got)
	}
}

func TestTableRatiosAndTargets(t *testing.T) {
	tb := NewTable("t", "base")
	tb.Add(Result{Name: "base", RPS: 1000})
	tb.Add(Result{Name: "half", RPS: 500})
	if !tb.Target(true, "a") || tb.Target(false, "b") {
		t.Fatal("Target must return whether the goal was met")
	}
	out := tb.String()
	for _, want := range []string{"| base |", "baseline", "0.50×", "target PASS: a", "target MISS: b"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}
