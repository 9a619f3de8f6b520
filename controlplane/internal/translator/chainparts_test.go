package translator

import (
	"sync"
	"testing"
)

// TestShareKeepsTheFirst: hosts making a part at once all get the one that
// was kept, and a part that failed to be made is not kept.
func TestShareKeepsTheFirst(t *testing.T) {
	var mu sync.Mutex
	m := map[int]*int{}
	got := make([]*int, 64)
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() {
			got[i], _ = share(&mu, m, i%2, func() (*int, bool) { v := i; return &v, true })
		})
	}
	wg.Wait()
	for i, p := range got {
		if p != m[i%2] {
			t.Fatalf("host %d got a part that was not kept", i)
		}
	}
	// Another host keeps its part while this one makes its own: this one
	// gets the other's.
	first, mine := 1, 2
	if got, _ := share(&mu, m, 5, func() (*int, bool) {
		mu.Lock()
		m[5] = &first
		mu.Unlock()
		return &mine, true
	}); got != &first || m[5] != &first {
		t.Errorf("got %d, kept %d: want the first made, 1", *got, *m[5])
	}
	if _, ok := share(&mu, m, 7, func() (*int, bool) { return nil, false }); ok {
		t.Error("a failed part reported as made")
	}
	if _, kept := m[7]; kept {
		t.Error("a failed part was kept")
	}
}
