package sdk

import (
	"iter"
	"maps"
	"slices"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
)

// Headers is a header or trailer map as Envoy sent it, plus the changes
// processors make to it. It is valid only during the phase call. Names are case-insensitive (Envoy sends them in
// lower case); pseudo-headers such as ":path" are included.
//
// Reads see earlier changes, so processors in a Chain see each other's
// work. The driver turns the changes into one HeaderMutation: Envoy applies
// remove_headers before set_headers, so the mutation is the net effect
// (a Del then a Set becomes one overwrite), not the call sequence.
type Headers struct {
	// EndOfStream is set on a headers message when no body follows.
	EndOfStream bool

	m       map[string][]string
	touched []string               // names changed, in first-change order
	edits   map[string]*headerEdit // by lower-case name
}

type headerEdit struct {
	replace bool     // Set or Del happened: the original values are gone
	values  []string // values to write (after replace) or to append
}

func newHeaders(hm *corev3.HeaderMap, eos bool) *Headers {
	h := &Headers{EndOfStream: eos, m: make(map[string][]string, len(hm.GetHeaders()))}
	for _, hv := range hm.GetHeaders() {
		k := lower(hv.GetKey())
		v := hv.GetValue()
		if raw := hv.GetRawValue(); len(raw) > 0 {
			v = string(raw)
		}
		h.m[k] = append(h.m[k], v)
	}
	return h
}

// Get returns the first value of name, or "".
func (h *Headers) Get(name string) string {
	if v := h.m[lower(name)]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// Values returns all values of name.
func (h *Headers) Values(name string) []string { return h.m[lower(name)] }

// Has reports whether name is present.
func (h *Headers) Has(name string) bool { return len(h.m[lower(name)]) > 0 }

// All yields every (name, value) pair, names sorted.
func (h *Headers) All() iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		for _, k := range slices.Sorted(maps.Keys(h.m)) {
			for _, v := range h.m[k] {
				if !yield(k, v) {
					return
				}
			}
		}
	}
}

// Set replaces every value of name with value.
func (h *Headers) Set(name, value string) {
	k := lower(name)
	h.m[k] = []string{value}
	e := h.edit(k)
	e.replace, e.values = true, []string{value}
}

// Add appends value to name's values.
func (h *Headers) Add(name, value string) {
	k := lower(name)
	h.m[k] = append(h.m[k], value)
	e := h.edit(k)
	e.values = append(e.values, value)
}

// Del removes name.
func (h *Headers) Del(name string) {
	k := lower(name)
	delete(h.m, k)
	e := h.edit(k)
	e.replace, e.values = true, nil
}

// Changed reports whether any processor changed the map.
func (h *Headers) Changed() bool { return len(h.touched) > 0 }

func (h *Headers) edit(k string) *headerEdit {
	if h.edits == nil {
		h.edits = map[string]*headerEdit{}
	}
	e := h.edits[k]
	if e == nil {
		e = &headerEdit{}
		h.edits[k] = e
		h.touched = append(h.touched, k)
	}
	return e
}

// mutation is the net HeaderMutation, or nil when nothing changed.
func (h *Headers) mutation() *extprocv3.HeaderMutation {
	if len(h.touched) == 0 {
		return nil
	}
	m := &extprocv3.HeaderMutation{}
	for _, k := range h.touched {
		e := h.edits[k]
		if e.replace && len(e.values) == 0 {
			m.RemoveHeaders = append(m.RemoveHeaders, k)
			continue
		}
		for i, v := range e.values {
			action := corev3.HeaderValueOption_APPEND_IF_EXISTS_OR_ADD
			if e.replace && i == 0 {
				action = corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD
			}
			m.SetHeaders = append(m.SetHeaders, headerOption(k, v, action))
		}
	}
	return m
}

func headerOption(k, v string, action corev3.HeaderValueOption_HeaderAppendAction) *corev3.HeaderValueOption {
	return &corev3.HeaderValueOption{
		Header:       &corev3.HeaderValue{Key: k, RawValue: []byte(v)},
		AppendAction: action,
	}
}

// lower is strings.ToLower without an allocation for names that are
// already lower case, as Envoy sends them.
func lower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; 'A' <= c && c <= 'Z' {
			return strings.ToLower(s)
		}
	}
	return s
}
