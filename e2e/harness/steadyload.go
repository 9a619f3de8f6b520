package harness

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/portcullis/portcullis/e2e/loadgen"
)

// SteadyLoad is load kept on a target while a fault is injected: the load
// generator's closed loop, and the longest time without any successful
// request (the gap a client would see).
type SteadyLoad struct {
	done   chan struct{}
	cancel context.CancelFunc
	result loadgen.Result

	mu          sync.Mutex
	lastSuccess time.Time
	longestGap  time.Duration
}

// LoadReport is what a fault test reports: requests sent, failed, and the
// longest time without a successful answer.
type LoadReport struct {
	loadgen.Result
	LongestGap time.Duration
}

func (r LoadReport) String() string {
	s := fmt.Sprintf("%d requests, %d failed, longest gap %s (p99 %s, max %s)", r.Requests, r.Errors,
		r.LongestGap.Round(time.Millisecond), loadgen.Ms(r.P99), loadgen.Ms(r.Max))
	if r.FirstError != nil {
		s += fmt.Sprintf("; first error: %v", r.FirstError)
	}
	return s
}

// StartSteadyLoad runs do with concurrency workers for d in the
// background (or until Stop); Wait returns the report.
func StartSteadyLoad(concurrency int, d time.Duration, do loadgen.Do) *SteadyLoad {
	ctx, cancel := context.WithCancel(context.Background())
	l := &SteadyLoad{done: make(chan struct{}), cancel: cancel, lastSuccess: time.Now()}
	go func() {
		defer close(l.done)
		l.result = loadgen.Run(ctx, "steady", loadgen.Config{Concurrency: concurrency, Duration: d}, func(ctx context.Context, w int) error {
			err := do(ctx, w)
			if err == nil {
				now := time.Now()
				l.mu.Lock()
				l.longestGap = max(l.longestGap, now.Sub(l.lastSuccess))
				l.lastSuccess = now
				l.mu.Unlock()
			}
			return err
		})
		// A load that ends failing: the gap runs to its end.
		l.mu.Lock()
		l.longestGap = max(l.longestGap, time.Since(l.lastSuccess))
		l.mu.Unlock()
	}()
	return l
}

// Stop ends the load now (a request it cuts short is not counted) and
// reports it: for a load that must last until a fault is over, however
// long that takes.
func (l *SteadyLoad) Stop() LoadReport {
	l.cancel()
	return l.Wait()
}

// Wait waits for the load to end and reports it.
func (l *SteadyLoad) Wait() LoadReport {
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	return LoadReport{Result: l.result, LongestGap: l.longestGap}
}
