package htpasswd

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"sync"
	"time"
)

// cacheKey identifies one successful verification.
type cacheKey [sha256.Size]byte

// keyer derives cache keys: HMAC-SHA256 under a key drawn at start-up, of
// (realm, user, password, stored hash), each length-prefixed so that no two
// tuples share an encoding. A changed password or hash gives another key,
// so a change invalidates without any bookkeeping, and memory never holds
// anything an attacker could test passwords against without the HMAC key.
type keyer struct {
	pool sync.Pool // of *keyState
}

type keyState struct {
	mac hash.Hash
	buf []byte
}

func newKeyer() *keyer {
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return &keyer{pool: sync.Pool{New: func() any { return &keyState{mac: hmac.New(sha256.New, secret)} }}}
}

func (k *keyer) key(realm, user, password, storedHash string) cacheKey {
	st := k.pool.Get().(*keyState)
	b := st.buf[:0]
	for _, s := range []string{realm, user, password, storedHash} {
		b = appendLenPrefixed(b, s)
	}
	st.mac.Reset()
	st.mac.Write(b)
	var out cacheKey
	st.mac.Sum(out[:0])
	clear(b) // the buffer held a password
	st.buf = b
	k.pool.Put(st)
	return out
}

const cacheShards = 64

// cache holds successful verifications for ttl, at most about size of
// them. It is sharded so that concurrent checks rarely meet on a lock, and
// a full shard evicts a random entry (Go map iteration order), which costs
// O(1) and is good enough for a working set that fits. Expired entries
// are ignored by get and leave by eviction.
type cache struct {
	shards   [cacheShards]cacheShard
	perShard int
	ttl      time.Duration
	now      func() time.Time
}

type cacheShard struct {
	mu sync.RWMutex
	m  map[cacheKey]int64 // expiry, unix nanoseconds
}

// newCache returns nil (no caching) when size or ttl is not positive.
func newCache(size int, ttl time.Duration) *cache {
	if size <= 0 || ttl <= 0 {
		return nil
	}
	c := &cache{perShard: max(1, (size+cacheShards-1)/cacheShards), ttl: ttl, now: time.Now}
	for i := range c.shards {
		c.shards[i].m = make(map[cacheKey]int64)
	}
	return c
}

func (c *cache) shard(k cacheKey) *cacheShard { return &c.shards[k[0]%cacheShards] }

func (c *cache) get(k cacheKey) bool {
	if c == nil {
		return false
	}
	s := c.shard(k)
	s.mu.RLock()
	exp, ok := s.m[k]
	s.mu.RUnlock()
	return ok && c.now().UnixNano() < exp
}

func (c *cache) put(k cacheKey) {
	if c == nil {
		return
	}
	now := c.now().UnixNano()
	s := c.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[k]; !ok && len(s.m) >= c.perShard {
		for old := range s.m { // the first key met is a random one
			delete(s.m, old)
			break
		}
	}
	s.m[k] = now + c.ttl.Nanoseconds()
}

func (c *cache) len() int {
	if c == nil {
		return 0
	}
	n := 0
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.RLock()
		n += len(s.m)
		s.mu.RUnlock()
	}
	return n
}

// flight makes concurrent verifications of the same key share one
// comparison (singleflight): a burst of N checks with the same uncached
// credentials costs one bcrypt, not N.
type flight struct {
	mu    sync.Mutex
	calls map[cacheKey]*call
}

type call struct {
	done      chan struct{}
	ok        bool
	abandoned bool // fn gave up before comparing (its caller left): not an answer
	waiters   int  // calls sharing this one (guarded by flight.mu)
}

// do runs fn for k, or waits for the run in flight and shares its result.
// A run that fn reports abandoned is no answer for the waiters: they see
// abandoned too and decide for themselves (try again).
func (f *flight) do(k cacheKey, fn func() (ok, abandoned bool)) (ok, abandoned, shared bool) {
	f.mu.Lock()
	if c, running := f.calls[k]; running {
		c.waiters++
		f.mu.Unlock()
		<-c.done
		return c.ok, c.abandoned, true
	}
	if f.calls == nil {
		f.calls = make(map[cacheKey]*call)
	}
	c := &call{done: make(chan struct{})}
	f.calls[k] = c
	f.mu.Unlock()

	defer func() { // also when fn panics: waiters must not hang
		f.mu.Lock()
		delete(f.calls, k)
		f.mu.Unlock()
		close(c.done)
	}()
	c.ok, c.abandoned = fn()
	return c.ok, c.abandoned, false
}

// appendLenPrefixed appends s after its length, so that the fields' encoding
// is unambiguous ("ab", "c" is not "a", "bc"). A varint holds any length:
// a fixed 32 bits would wrap around on a string of 4 GiB.
func appendLenPrefixed(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}
