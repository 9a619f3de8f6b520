package xdsserver

import "time"

// Lag is, for one resource type, how far the xDS clients are behind what
// they were sent: a client that NACKs, or never answers, stays behind
// until it ACKs a later response.
type Lag struct {
	// Behind counts the streams that have not ACKed the latest response
	// of the type sent to them.
	Behind int
	// Oldest is how long the longest-waiting of them has had a response
	// it has not ACKed.
	Oldest time.Duration
}

// acked records that the stream ACKed sent[i]: it waits for the response
// after it, or for none when sent[i] is the latest.
func (st *stream) acked(typeURL string, sent []sentResponse, i int) {
	if i == len(sent)-1 {
		delete(st.waiting, typeURL)
		return
	}
	st.waiting[typeURL] = sent[i+1].at
}

// Lags returns, by type URL, the streams behind and the oldest wait at
// now; types no stream is behind on are absent.
func (s *Server) Lags(now time.Time) map[string]Lag {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]Lag{}
	for _, st := range s.streams {
		for typeURL, since := range st.waiting {
			l := out[typeURL]
			l.Behind++
			l.Oldest = max(l.Oldest, now.Sub(since))
			out[typeURL] = l
		}
	}
	return out
}
