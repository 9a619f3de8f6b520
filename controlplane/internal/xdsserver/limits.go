package xdsserver

import (
	"context"
	"net"
	"sort"
	"sync"
	"unicode/utf8"

	"google.golang.org/grpc/peer"
)

// Limits bound what one xDS client can make the server do or keep: a
// client holding what an Envoy needs to connect (under mTLS, a client
// certificate the server trusts) may send anything. Each refusal is
// counted by reason (Refused), served as portcullis_xds_refused_total.
type Limits struct {
	// StreamsPerPeer bounds the ADS streams open at once from one peer:
	// the certificate's identity (subject and issuer) under mTLS, else the
	// remote IP address. An Envoy opens one; a fleet sharing one
	// certificate shares the bound. Reason streams_per_peer.
	StreamsPerPeer int
	// NamesPerSubscription bounds the resource names one stream subscribes
	// to of one type (an Envoy at 10,000 TLS hosts names 10,001 route
	// configurations). Reason names_per_subscription.
	NamesPerSubscription int
	// MaxRequestBytes is the largest request read (gRPC's maximum receive
	// size); a larger one ends the stream. Reason request_size.
	MaxRequestBytes int
	// MaxRejections bounds the rejections kept, over every stream (each
	// keeps at most one per type); a NACK beyond it is counted and logged,
	// not kept. Reason rejections_full.
	MaxRejections int
	// MaxRejectionsPerType bounds the rejections kept of one type, over
	// every stream, so that one type's leave room for the others'. Reason
	// rejections_full.
	MaxRejectionsPerType int
}

// DefaultLimits are the limits of a new Server.
var DefaultLimits = Limits{
	StreamsPerPeer:       1024,
	NamesPerSubscription: 100_000,
	MaxRequestBytes:      4 << 20,
	MaxRejections:        256,
	MaxRejectionsPerType: 64,
}

// MaxMessage bounds the error text of a NACK the server keeps, logs and
// passes on (longer ones are cut, and end in "...").
const MaxMessage = 4096

// Reasons of refusals (Refused), as portcullis_xds_refused_total labels them.
const (
	RefusedStreamsPerPeer       = "streams_per_peer"
	RefusedNamesPerSubscription = "names_per_subscription"
	RefusedRequestSize          = "request_size"
	RefusedUnknownType          = "unknown_type"
	RefusedRejectionsFull       = "rejections_full"
	// RefusedUnsentRejection: a NACK of a response the stream was not
	// sent (a made-up nonce), which is about nothing.
	RefusedUnsentRejection = "unsent_rejection"
)

// RefusedReasons are every reason of Refused.
var RefusedReasons = []string{RefusedStreamsPerPeer, RefusedNamesPerSubscription, RefusedRequestSize, RefusedUnknownType,
	RefusedRejectionsFull, RefusedUnsentRejection}

// knownTypes are the type URLs the server serves; a request for another
// is refused, so that what a client names never becomes a key or a label.
var knownTypes = func() map[string]bool {
	m := map[string]bool{}
	for _, t := range publishOrder {
		m[t] = true
	}
	return m
}()

// knownTypeList is knownTypes for an error message.
var knownTypeList = func() []string {
	out := append([]string(nil), publishOrder...)
	sort.Strings(out)
	return out
}()

// refusals counts refusals by reason.
type refusals struct {
	mu sync.Mutex
	n  map[string]int64
}

func (r *refusals) add(reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == nil {
		r.n = map[string]int64{}
	}
	r.n[reason]++
}

// Refused returns the requests and streams refused and the NACKs not
// kept, by reason (the Refused* constants).
func (s *Server) Refused() map[string]int64 {
	s.refused.mu.Lock()
	defer s.refused.mu.Unlock()
	out := make(map[string]int64, len(RefusedReasons))
	for _, r := range RefusedReasons {
		out[r] = s.refused.n[r]
	}
	return out
}

// peerKey is who a stream's peer is, for StreamsPerPeer: the
// certificate's identity under mTLS, else the remote IP address.
func peerKey(ctx context.Context, cert ClientCertificate, mtls bool) string {
	if mtls {
		return "cert " + cert.Subject + " issued by " + cert.Issuer
	}
	p, ok := peer.FromContext(ctx)
	if !ok || p.Addr == nil {
		return ""
	}
	host, _, err := net.SplitHostPort(p.Addr.String())
	if err != nil {
		return p.Addr.String()
	}
	return host
}

// maxNode and maxVersion bound the node ID and the kept version a client
// sends, as the server keeps them.
const maxNode, maxVersion = 256, 64

// truncate cuts a message to MaxMessage bytes.
func truncate(msg string) string { return cut(msg, MaxMessage) }

// cut cuts s to n bytes (on a character boundary), marking the cut with
// "...".
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}
