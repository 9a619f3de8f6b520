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
