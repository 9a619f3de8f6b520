package xdsserver

import (
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// What Envoy rejects is kept by stream: a NACK is about a response that
// stream was sent (its nonce), and only about the resources that response
// carried; the stream's next ACK of a resource clears it, and its end
// clears all of it. A stream keeps at most one rejection per type, and
// the server at most Limits.MaxRejections (Limits.MaxRejectionsPerType of
// one type). The text Envoy sends is cut to
// MaxMessage. The names are looked for in the text outside the lock every
// stream needs (a 1 MB message about 10,001 route configurations held it
// for seconds).

// nack records a NACK of typeURL answering the response nonce of stream
// id, Envoy keeping version accepted (state of the world; "" for delta,
// whose accepted version is the last ACKed one).
func (s *Server) nack(id int64, node, typeURL, nonce, accepted, message string, delta bool) {
	message = truncate(message)
	s.mu.Lock()
	st := s.stream(id, node)
	sent, known := st.response(typeURL, nonce)
	if delta {
		accepted = s.acked[typeURL]
	}
	accepted = cut(accepted, maxVersion)
	rej := Rejection{TypeURL: typeURL, Version: sent.version, Accepted: accepted, Node: st.node, Message: message, Time: time.Now()}
	prev := st.rejections[typeURL]
	onRej := s.OnRejection
	s.mu.Unlock()
	if !known {
		// Not an answer to anything this stream was sent: about nothing.
		rej.Version = "unknown"
		s.notKept(RefusedUnsentRejection, "Envoy rejected a response it was not sent", rej, onRej)
		return
	}
	rej.Resources = blamed(&sent, accepted, message, delta, prev)
	s.mu.Lock()
	if s.streams[id] != st {
		s.mu.Unlock() // the stream ended meanwhile
		return
	}
	_, had := st.rejections[typeURL]
	if !had && s.full(typeURL) {
		s.mu.Unlock()
		s.notKept(RefusedRejectionsFull, "Envoy rejected configuration (not kept: too many rejections)", rej, onRej)
		return
	}
	if !had {
		s.kept++
		s.keptByType[typeURL]++
	}
	st.rejections[typeURL] = rej
	changed := !had || prev.Message != rej.Message || !slices.Equal(prev.Resources, rej.Resources)
	onChange := s.OnChange
	s.mu.Unlock()
	if changed {
		s.logRejection("Envoy rejected configuration", rej)
	}
	if onRej != nil {
		onRej(rej)
	}
	if changed && onChange != nil {
		onChange()
	}
}

// full reports whether no more rejections of typeURL may be kept. Called
// with mu held.
func (s *Server) full(typeURL string) bool {
	return s.kept >= s.Limits.MaxRejections || s.keptByType[typeURL] >= s.Limits.MaxRejectionsPerType
}

// notKept counts, logs and reports a NACK that is not kept. Called
// without mu held.
func (s *Server) notKept(reason, what string, rej Rejection, onRej func(Rejection)) {
	s.refused.add(reason)
	s.logRejection(what, rej)
	if onRej != nil {
		onRej(rej)
	}
}

// logRejection logs a rejection, at most logRate a second (with a burst):
// what a client says is bounded in the log too.
func (s *Server) logRejection(what string, rej Rejection) {
	if !s.logLimit.Allow() {
		return
	}
	s.log.Error(what, "type", rej.TypeURL, "version", rej.Version, "kept", rej.Accepted,
		"resources", rej.Resources, "node", rej.Node, "error", rej.Message)
}

// blamed names the resources a NACK of the response sent is about: those
// of it the message names; else, for state of the world, those of it that
// changed since the version Envoy kept, or all of it. A stream's earlier
// rejection of resources the response did not carry still holds. Called
// without mu held: the response's names are never modified.
func blamed(sent *sentResponse, accepted, message string, delta bool, prev Rejection) []string {
	carried := sent.carried()
	out := mentioned(message, carried)
	if len(out) == 0 && !delta && sent.table != nil {
		if v, err := strconv.ParseUint(accepted, 10, 64); err == nil {
			if touched, ok := sent.table.touchedSince(v); ok && len(touched) > 0 {
				in := make(map[string]bool, len(carried))
				for _, n := range carried {
					in[n] = true
				}
				for _, n := range touched {
					if in[n] {
						out = append(out, n)
					}
				}
			}
		}
	}
	if len(out) == 0 {
		out = slices.Clone(carried)
	}
	if len(prev.Resources) > 0 {
		in := make(map[string]bool, len(carried))
		for _, n := range carried {
			in[n] = true
		}
		for _, n := range prev.Resources {
			if !in[n] {
				out = append(out, n)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// mentioned are the names the message mentions (as mentions sees it): a
// name made of name bytes only is looked up among the message's words,
// so that the message is read once, not once per name.
func mentioned(message string, names []string) []string {
	words := map[string]bool{}
	for i := 0; i < len(message); {
		if !isNameByte(message[i]) {
			i++
			continue
		}
		j := i
		for j < len(message) && isNameByte(message[j]) {
			j++
		}
		words[message[i:j]] = true
		i = j
	}
	var out []string
	for _, n := range names {
		if plainName(n) {
			if words[n] {
				out = append(out, n)
			}
		} else if mentions(message, n) {
			out = append(out, n)
		}
	}
	return out
}

// plainName reports whether every byte of name is a name byte.
func plainName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !isNameByte(name[i]) {
			return false
		}
	}
	return true
}

// accepted records an ACK of the response sent of typeURL on stream st:
// its version is acked, and the resources it carried are no longer
// rejected by the stream. It reports whether the rejections changed.
// Called with mu held.
func (s *Server) accepted(st *stream, typeURL string, sent *sentResponse) bool {
	s.acked[typeURL] = sent.version
	prev, had := st.rejections[typeURL]
	if !had {
		return false
	}
	var left []string
	if !sent.all {
		in := make(map[string]bool, len(sent.names))
		for _, n := range sent.names {
			in[n] = true
		}
		left = slices.DeleteFunc(slices.Clone(prev.Resources), func(n string) bool { return in[n] })
	}
	if len(left) == 0 {
		delete(st.rejections, typeURL)
		s.forget(typeURL)
		s.log.Info("Envoy accepted configuration again", "type", typeURL, "version", sent.version, "node", st.node)
		return true
	}
	if len(left) == len(prev.Resources) {
		return false
	}
	prev.Resources = left
	st.rejections[typeURL] = prev
	return true
}

// forget counts one rejection of typeURL less. Called with mu held.
func (s *Server) forget(typeURL string) {
	s.kept--
	if s.keptByType[typeURL]--; s.keptByType[typeURL] <= 0 {
		delete(s.keptByType, typeURL)
	}
}

// Rejections lists the configurations Envoy currently refuses: those of
// every stream, one for each type, version and set of resources (the
// latest message), by type.
func (s *Server) Rejections() []Rejection {
	s.mu.Lock()
	defer s.mu.Unlock()
	byKey := map[string]Rejection{}
	for _, st := range s.streams {
		for _, r := range st.rejections {
			key := r.TypeURL + "\x00" + r.Version + "\x00" + strings.Join(r.Resources, "\x00")
			if prev, ok := byKey[key]; !ok || r.Time.After(prev.Time) {
				byKey[key] = r
			}
		}
	}
	out := slices.Collect(maps.Values(byKey))
	sort.Slice(out, func(i, j int) bool {
		if out[i].TypeURL != out[j].TypeURL {
			return out[i].TypeURL < out[j].TypeURL
		}
		return strings.Join(out[i].Resources, ",") < strings.Join(out[j].Resources, ",")
	})
	return out
}
