package main

import (
	"runtime"
	"runtime/metrics"
	"slices"
	"sync"
	"syscall"
	"time"
)

// figures are what one driver run measures. Portcullis's driver
// (controlplane/internal/pipeline/contour_bench_test.go) measures the same
// figures the same way: change both together.
type figures struct {
	Objects    int `json:"objects"`
	ValidRoots int `json:"validRoots"`
	// The first build, from the objects to the xDS resources, and their
	// publication to the xDS server.
	BuildCPU    int64  `json:"buildCPUNs"` // user + system, every thread
	PublishCPU  int64  `json:"publishCPUNs"`
	BuildWall   int64  `json:"buildWallNs"`
	BuildAllocs uint64 `json:"buildAllocs"`
	BuildBytes  uint64 `json:"buildBytes"`
	// HeapPeak is the largest heap seen during the first build and
	// publication (sampled every millisecond), the objects read included.
	HeapPeak     uint64 `json:"heapPeakBytes"`
	XDSBytes     int    `json:"xdsBytes"`
	XDSResources int    `json:"xdsResources"`
	// One root changed, rebuilt and published: medians.
	ChangeCPU    int64  `json:"changeCPUNs"`
	ChangeWall   int64  `json:"changeWallNs"`
	ChangeAllocs uint64 `json:"changeAllocs"`
}

// sample reads the cumulative allocation counters and the CPU time.
type sample struct {
	allocs, bytes uint64
	cpu           int64
	at            time.Time
}

func now() sample {
	m := []metrics.Sample{{Name: "/gc/heap/allocs:objects"}, {Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(m)
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return sample{allocs: m[0].Value.Uint64(), bytes: m[1].Value.Uint64(),
		cpu: ru.Utime.Nano() + ru.Stime.Nano(), at: time.Now()}
}

// measureBuild runs build, then publish, once, after a collection, with
// the heap sampled.
func (f *figures) measureBuild(build, publish func()) {
	runtime.GC()
	stop := heapPeak()
	before := now()
	build()
	after := now()
	publish()
	published := now()
	f.HeapPeak = stop()
	f.BuildCPU, f.BuildWall = after.cpu-before.cpu, after.at.Sub(before.at).Nanoseconds()
	f.BuildAllocs, f.BuildBytes = after.allocs-before.allocs, after.bytes-before.bytes
	f.PublishCPU = published.cpu - after.cpu
}

// measureChanges runs change(1..n), each after a collection, and keeps
// the medians.
func (f *figures) measureChanges(n int, change func(i int)) {
	var cpu, wall []int64
	var allocs []uint64
	for i := 1; i <= n; i++ {
		runtime.GC()
		before := now()
		change(i)
		after := now()
		cpu, wall = append(cpu, after.cpu-before.cpu), append(wall, after.at.Sub(before.at).Nanoseconds())
		allocs = append(allocs, after.allocs-before.allocs)
	}
	f.ChangeCPU, f.ChangeWall, f.ChangeAllocs = median(cpu), median(wall), median(allocs)
}

// heapPeak samples the heap every millisecond until stop, which returns
// the largest sample.
func heapPeak() (stop func() uint64) {
	var peak uint64
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		m := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(m)
			peak = max(peak, m[0].Value.Uint64())
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 { close(done); wg.Wait(); return peak }
}

func median[T int64 | uint64](xs []T) T {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	return xs[len(xs)/2]
}
