package translator

import (
	"sync"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
)

// chainParts are the parts of TLS hosts' filter chains that hosts share,
// made once per translation: the encodings of their HCMs but for the
// host's name (hcmencoding.go), and their TLS contexts (tls.go). Safe for
// concurrent use; a nil *chainParts makes every part anew.
type chainParts struct {
	mu      sync.Mutex
	rest    map[hcmShape]hcmRest
	sockets map[downstreamShape]*corev3.TransportSocket
}

func newChainParts() *chainParts {
	return &chainParts{rest: map[hcmShape]hcmRest{}, sockets: map[downstreamShape]*corev3.TransportSocket{}}
}

// share returns m[k], made by build when m has none: outside the lock,
// since most parts are made for one host only (a certificate each), and
// the first made is kept when two hosts make one at once. false when build
// failed: nothing is kept.
func share[K comparable, V any](mu *sync.Mutex, m map[K]V, k K, build func() (V, bool)) (V, bool) {
	mu.Lock()
	v, ok := m[k]
	mu.Unlock()
	if ok {
		return v, true
	}
	if v, ok = build(); !ok {
		return v, false
	}
	mu.Lock()
	defer mu.Unlock()
	if first, made := m[k]; made {
		return first, true
	}
	m[k] = v
	return v, true
}
