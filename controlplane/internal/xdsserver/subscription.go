package xdsserver

import (
	"hash/maphash"
	"sync"
)

// A fleet's Envoys subscribe to the same names (at 10,000 TLS hosts, each
// to the same 10,001 route configurations): the streams share one set of
// them rather than each keeping its own, and a state-of-the-world request,
// which repeats every name on every ACK, is told unchanged by its
// fingerprint alone.

// fingerprint identifies a set of names whatever their order: the sum and
// the xor of their hashes, and their count.
type fingerprint struct {
	sum, xor uint64
	n        int
}

var nameSeed = maphash.MakeSeed()

func (f *fingerprint) add(name string) {
	h := maphash.String(nameSeed, name)
	f.sum += h
	f.xor ^= h
	f.n++
}

// addBytes is add for a name still encoded (the same hash as its string).
func (f *fingerprint) addBytes(name []byte) {
	h := maphash.Bytes(nameSeed, name)
	f.sum += h
	f.xor ^= h
	f.n++
}

func (f *fingerprint) remove(name string) {
	h := maphash.String(nameSeed, name)
	f.sum -= h
	f.xor ^= h
	f.n--
}

func fingerprintOf(names []string) fingerprint {
	var f fingerprint
	for _, n := range names {
		f.add(n)
	}
	return f
}

// nameSet is a set of subscribed names, shared and never modified.
type nameSet struct {
	key   fingerprint
	names map[string]struct{}
	refs  int
}

func (s *nameSet) has(name string) bool {
	if s == nil {
		return false
	}
	_, ok := s.names[name]
	return ok
}

// nameSets holds the sets in use, by fingerprint.
type nameSets struct {
	mu    sync.Mutex
	byKey map[fingerprint]*nameSet
}

// get returns the set of fingerprint key, made by build if no stream
// holds it; the caller releases it.
func (ns *nameSets) get(key fingerprint, build func() map[string]struct{}) *nameSet {
	ns.mu.Lock()
	if s := ns.byKey[key]; s != nil {
		s.refs++
		ns.mu.Unlock()
		return s
	}
	ns.mu.Unlock()
	// Built outside the lock (10,000 names take a while); another stream
	// may build the same set meanwhile: the first one stored wins.
	built := &nameSet{key: key, names: build()}
	ns.mu.Lock()
	defer ns.mu.Unlock()
	if s := ns.byKey[key]; s != nil {
		s.refs++
		return s
	}
	if ns.byKey == nil {
		ns.byKey = map[fingerprint]*nameSet{}
	}
	built.refs = 1
	ns.byKey[key] = built
	return built
}

// release gives s back; it is forgotten when no stream holds it.
func (ns *nameSets) release(s *nameSet) {
	if s == nil {
		return
	}
	ns.mu.Lock()
	defer ns.mu.Unlock()
	if s.refs--; s.refs == 0 && ns.byKey[s.key] == s {
		delete(ns.byKey, s.key)
	}
}
