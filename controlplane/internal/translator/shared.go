package translator

import "sync"

// shared keeps messages built from a comparable key so that equal inputs
// share one message, built and packed once, instead of the same bytes
// being packed again for each of thousands of hosts. A message is never
// modified once built (docs/design/caches.md), so sharing is safe; the
// output is the same as without it. Bounded: past max entries it starts
// again, so odd inputs cannot grow it without limit. Safe for the
// translation's parallel workers.
type shared[K comparable, V any] struct {
	mu  sync.Mutex
	m   map[K]V
	max int
}

func newShared[K comparable, V any](max int) *shared[K, V] {
	return &shared[K, V]{m: map[K]V{}, max: max}
}

// get returns the message of k, built by build if it is not kept; build
// runs outside the lock (two workers may both build it, once).
func (s *shared[K, V]) get(k K, build func() V) V {
	s.mu.Lock()
	v, ok := s.m[k]
	s.mu.Unlock()
	if ok {
		return v
	}
	v = build()
	s.mu.Lock()
	if len(s.m) >= s.max {
		clear(s.m)
	}
	s.m[k] = v
	s.mu.Unlock()
	return v
}
