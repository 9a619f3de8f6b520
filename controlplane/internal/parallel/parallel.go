// Package parallel runs independent pieces of work on every core: the
// control plane's translation and YAML decoding at scale.
package parallel

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// minParallel is the smallest n worth starting goroutines for.
const minParallel = 64

// For calls f(i) for every i in [0, n), on up to GOMAXPROCS goroutines
// (on the caller's for small n), and returns when all calls have. Calls
// must be independent: each writes only its own i's results.
func For(n int, f func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 || n < minParallel {
		for i := range n {
			f(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				f(i)
			}
		})
	}
	wg.Wait()
}
