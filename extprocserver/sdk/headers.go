package sdk

import (
	"fmt"
	"iter"
	"slices"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocsvcv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

	"github.com/portcullis/portcullis/serverkit/httpheader"
)

// Headers is a header or trailer map as Envoy sent it, plus the changes
// processors make to it. It is valid only during the phase call. Names
// are case-insensitive (Envoy sends them in lower case); pseudo-headers
// such as ":path" are included.
//
// Reads see earlier changes, so processors in a Chain see each other's
// work. The driver turns the changes into one HeaderMutation: Envoy applies
// remove_headers before set_headers, so the mutation is the net effect
// (a Del then a Set becomes one overwrite), not the call sequence.
type Headers struct {
	// EndOfStream is set on a headers message when no body follows.
	EndOfStream bool

	// What Envoy sent, until fields is built: decoded by protobuf (src),
	// or the HeaderMap's bytes from Codec (raw, rawLen values).
	src    []*corev3.HeaderValue
	raw    string
	rawLen int

	loaded bool
	fields []field      // built on first use: see load
	edits  []headerEdit // names changed, in first-change order
}

// field is one header value; names are lower case.
type field struct{ name, value string }

type headerEdit struct {
	name    string   // lower case
	replace bool     // Set or Del happened: the original values are gone
	values  []string // values to write (after replace) or to append
}

// newHeaders sets h to the headers of a message: its header map decoded
// by protobuf (hm), or kept as bytes by Codec (r.lazy).
func newHeaders(h *Headers, r *request, hm *corev3.HeaderMap, eos bool) *Headers {
	*h = Headers{EndOfStream: eos}
	if r.lazy {
		h.raw, h.rawLen = r.rawMap, r.mapLen
	} else {
		h.src = hm.GetHeaders()
	}
	return h
}

// load returns the header values, decoded on first use: a processor that
// never looks at the headers (one that passes them through) costs no
// decoding. A few headers are searched faster in order than in a map.
func (h *Headers) load() []field {
	if !h.loaded {
		h.loaded = true
		if h.raw != "" {
			h.fields = parseFields(h.raw, h.rawLen)
		} else {
			h.fields = fieldsOf(h.src)
		}
		h.src, h.raw = nil, ""
	}
	return h.fields
}

// parseFields decodes a HeaderMap's bytes, checked by scanRequest: names
// and values share raw's memory; a non-empty raw_value wins over value.
func parseFields(raw string, n int) []field {
	fields := make([]field, 0, n)
	for len(raw) > 0 {
		_, hv, rest := stringField(raw)
		raw = rest
		var key, value, rawValue string
		for len(hv) > 0 {
			num, v, rest := stringField(hv)
			hv = rest
			switch num {
			case fieldKey:
				key = v
			case fieldValue:
				value = v
			default:
				rawValue = v
			}
		}
		if rawValue != "" {
			value = rawValue
		}
		fields = append(fields, field{lower(key), value})
	}
	return fields
}

// fieldsOf converts decoded header values; raw values share one string.
func fieldsOf(hvs []*corev3.HeaderValue) []field {
	size := 0
	for _, hv := range hvs {
		size += len(hv.GetRawValue())
	}
	var b strings.Builder
	b.Grow(size)
	for _, hv := range hvs {
		b.Write(hv.GetRawValue())
	}
	all, off := b.String(), 0
	fields := make([]field, len(hvs))
	for i, hv := range hvs {
		v := hv.GetValue()
		if n := len(hv.GetRawValue()); n > 0 {
			v = all[off : off+n]
			off += n
		}
		fields[i] = field{lower(hv.GetKey()), v}
	}
	return fields
}

// Get returns the first value of name, or "".
func (h *Headers) Get(name string) string {
	k := lower(name)
	for _, f := range h.load() {
		if f.name == k {
			return f.value
		}
	}
	return ""
}

// Values returns all values of name.
func (h *Headers) Values(name string) []string {
	k := lower(name)
	var vs []string
	for _, f := range h.load() {
		if f.name == k {
			vs = append(vs, f.value)
		}
	}
	return vs
}

// Has reports whether name is present.
func (h *Headers) Has(name string) bool {
	k := lower(name)
	for _, f := range h.load() {
		if f.name == k {
			return true
		}
	}
	return false
}

// All yields every (name, value) pair, names sorted, each name's values
// in order.
func (h *Headers) All() iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		sorted := slices.Clone(h.load())
		slices.SortStableFunc(sorted, func(a, b field) int { return strings.Compare(a.name, b.name) })
		for _, f := range sorted {
			if !yield(f.name, f.value) {
				return
			}
		}
	}
}

// Set replaces every value of name with value.
func (h *Headers) Set(name, value string) {
	k := lower(name)
	h.fields = append(h.remove(k), field{k, value})
	e := h.edit(k)
	e.replace, e.values = true, []string{value}
}

// Add appends value to name's values.
func (h *Headers) Add(name, value string) {
	k := lower(name)
	h.fields = append(h.load(), field{k, value})
	e := h.edit(k)
	e.values = append(e.values, value)
}

// Del removes name.
func (h *Headers) Del(name string) {
	k := lower(name)
	h.fields = h.remove(k)
	e := h.edit(k)
	e.replace, e.values = true, nil
}

// remove returns the fields without name k.
func (h *Headers) remove(k string) []field {
	return slices.DeleteFunc(h.load(), func(f field) bool { return f.name == k })
}

// Changed reports whether any processor changed the map.
func (h *Headers) Changed() bool { return len(h.edits) > 0 }

// edit returns k's edit, added if new. A linear search: processors change
// a few headers per message.
func (h *Headers) edit(k string) *headerEdit {
	for i := range h.edits {
		if h.edits[i].name == k {
			return &h.edits[i]
		}
	}
	h.edits = append(h.edits, headerEdit{name: k})
	return &h.edits[len(h.edits)-1]
}

// mutation is the net HeaderMutation, or nil when nothing changed. It
// refuses a change Envoy must never see (see checkHeader), so that one
// invalid value fails the message instead of reaching Envoy.
func (h *Headers) mutation() (*extprocsvcv3.HeaderMutation, error) {
	if len(h.edits) == 0 {
		return nil, nil
	}
	m := &extprocsvcv3.HeaderMutation{}
	n := 0
	for _, e := range h.edits {
		for _, v := range e.values {
			if err := checkHeader(e.name, v); err != nil {
				return nil, err
			}
		}
		if len(e.values) == 0 {
			if err := checkHeader(e.name, ""); err != nil {
				return nil, err
			}
		}
		n += len(e.values)
	}
	if n > 0 {
		m.SetHeaders = make([]*corev3.HeaderValueOption, 0, n)
	}
	opts := make([]headerOpt, n)
	for _, e := range h.edits {
		if e.replace && len(e.values) == 0 {
			m.RemoveHeaders = append(m.RemoveHeaders, e.name)
			continue
		}
		for i, v := range e.values {
			action := corev3.HeaderValueOption_APPEND_IF_EXISTS_OR_ADD
			if e.replace && i == 0 {
				action = corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD
			}
			o := &opts[len(m.SetHeaders)]
			m.SetHeaders = append(m.SetHeaders, o.set(e.name, v, action))
		}
	}
	return m, nil
}

// MaxHeaderValue is the longest header value Envoy accepts in a mutation.
const MaxHeaderValue = httpheader.MaxValue

// ValidHeaderName reports whether name is a non-empty RFC 9110 token (no
// pseudo-header colon, space, control character or separator); the auth
// servers apply the same rule (serverkit/httpheader).
func ValidHeaderName(name string) bool { return httpheader.ValidName(name) }

// CheckHeaderValue returns an error when v is not safe as a header value:
// a control character other than horizontal tab (CR, LF and NUL would
// split or truncate the header), or more than MaxHeaderValue bytes. The
// error says where, without repeating the value.
func CheckHeaderValue(v string) error { return httpheader.CheckValue(v) }

// checkHeader validates one header change; pseudo-headers (":path") are
// names too.
func checkHeader(name, value string) error {
	if !ValidHeaderName(strings.TrimPrefix(name, ":")) {
		return fmt.Errorf("invalid header name %q", name)
	}
	if err := CheckHeaderValue(value); err != nil {
		return fmt.Errorf("invalid value for header %s: %w", name, err)
	}
	return nil
}

// headerOpt holds a HeaderValueOption and its HeaderValue, so that a
// mutation allocates them together.
type headerOpt struct {
	opt corev3.HeaderValueOption
	val corev3.HeaderValue
}

func (o *headerOpt) set(k, v string, action corev3.HeaderValueOption_HeaderAppendAction) *corev3.HeaderValueOption {
	o.val.Key, o.val.RawValue = k, []byte(v)
	o.opt.Header, o.opt.AppendAction = &o.val, action
	return &o.opt
}

func headerOption(k, v string, action corev3.HeaderValueOption_HeaderAppendAction) *corev3.HeaderValueOption {
	return new(headerOpt).set(k, v, action)
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
