package jsonredact

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// A path is a small JSONPath subset: $ then any of .name, ['name'], [n],
// [*] or .* (every member or element), and ..name (name at any depth).
type segment struct {
	kind  segKind
	name  string
	index int
}

type segKind int

const (
	field segKind = iota
	index
	wildcard
	descendant
)

func parsePath(p string) ([]segment, error) {
	if !strings.HasPrefix(p, "$") {
		return nil, fmt.Errorf("path %q must start with $", p)
	}
	var segs []segment
	rest := p[1:]
	for rest != "" {
		seg, r, err := nextSegment(p, rest)
		if err != nil {
			return nil, err
		}
		segs, rest = append(segs, seg), r
	}
	if len(segs) == 0 {
		return nil, fmt.Errorf("path %q would redact the whole body", p)
	}
	return segs, nil
}

// nextSegment parses the segment at the start of rest, what is left of the
// path p (named in errors), and returns it with what follows it.
func nextSegment(p, rest string) (segment, string, error) {
	switch {
	case strings.HasPrefix(rest, ".."):
		name, r := ident(rest[2:])
		if name == "" {
			return segment{}, "", fmt.Errorf("path %q: .. needs a field name", p)
		}
		return segment{kind: descendant, name: name}, r, nil
	case strings.HasPrefix(rest, ".*"):
		return segment{kind: wildcard}, rest[2:], nil
	case strings.HasPrefix(rest, "."):
		name, r := ident(rest[1:])
		if name == "" {
			return segment{}, "", fmt.Errorf("path %q: . needs a field name", p)
		}
		return segment{kind: field, name: name}, r, nil
	case strings.HasPrefix(rest, "["):
		return bracketSegment(p, rest)
	}
	return segment{}, "", fmt.Errorf("path %q: unexpected %q", p, rest)
}

// bracketSegment parses [*], ['name'] or [n] at the start of rest.
func bracketSegment(p, rest string) (segment, string, error) {
	switch {
	case strings.HasPrefix(rest, "[*]"):
		return segment{kind: wildcard}, rest[3:], nil
	case strings.HasPrefix(rest, "['"):
		end := strings.Index(rest[2:], "']")
		if end < 0 {
			return segment{}, "", fmt.Errorf("path %q: unterminated ['", p)
		}
		return segment{kind: field, name: rest[2 : 2+end]}, rest[2+end+2:], nil
	}
	end := strings.IndexByte(rest, ']')
	if end < 0 {
		return segment{}, "", fmt.Errorf("path %q: unterminated [", p)
	}
	n, err := strconv.Atoi(rest[1:end])
	if err != nil || n < 0 {
		return segment{}, "", fmt.Errorf("path %q: [%s] is not an index, [*] or ['name']", p, rest[1:end])
	}
	return segment{kind: index, index: n}, rest[end+1:], nil
}

func ident(s string) (string, string) {
	i := strings.IndexAny(s, ".[")
	if i < 0 {
		return s, ""
	}
	return s[:i], s[i:]
}

// redact replaces the values at segs in the JSON document raw with repl
// (a JSON value). Members and elements it does not touch keep their bytes
// and order; only the containers on the way are re-serialised.
func redact(raw []byte, segs []segment, repl []byte) ([]byte, bool, error) {
	if len(segs) == 0 {
		return repl, true, nil
	}
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 {
		return raw, false, nil
	}
	seg := segs[0]
	switch trimmed[0] {
	case '{':
		return redactObject(trimmed, seg, segs, repl)
	case '[':
		return redactArray(trimmed, seg, segs, repl)
	}
	return raw, false, nil
}

// member is an object member as scanned: its key raw and decoded, and
// its value's bytes.
type member struct {
	keyRaw, val []byte
	key         string
	plain       bool // keyRaw is the key as json.Marshal writes it
}

// scanMember reads the member "key": value at raw[i:]; next is the index
// after it and the space that follows.
func scanMember(raw []byte, i int) (m member, next int, err error) {
	kEnd, err := skipString(raw, i)
	if err != nil {
		return member{}, 0, err
	}
	m.keyRaw = raw[i:kEnd]
	i = skipSpace(raw, kEnd)
	if i >= len(raw) || raw[i] != ':' {
		return member{}, 0, errBadJSON
	}
	i = skipSpace(raw, i+1)
	vEnd, err := skipValue(raw, i)
	if err != nil {
		return member{}, 0, err
	}
	m.val = raw[i:vEnd]
	m.key, m.plain = plainKey(m.keyRaw)
	if !m.plain {
		if err := json.Unmarshal(m.keyRaw, &m.key); err != nil {
			return member{}, 0, err
		}
	}
	return m, skipSpace(raw, vEnd), nil
}

// appendTo appends the member with the value val to out, its key as
// json.Marshal writes it: as it came when plain.
func (m member) appendTo(out, val []byte) []byte {
	if m.plain {
		out = append(out, m.keyRaw...)
	} else {
		k, _ := json.Marshal(m.key) // a string always marshals
		out = append(out, k...)
	}
	out = append(out, ':')
	return append(out, val...)
}

func redactObject(raw []byte, seg segment, segs []segment, repl []byte) ([]byte, bool, error) {
	if seg.kind == index {
		return raw, false, nil
	}
	// A scan of the members instead of encoding/json's Decoder, which
	// builds an error string at the end of every value it reads (most of
	// the time of ndjsonRedact). raw is valid JSON (redactAll checks).
	var out []byte
	changed := false
	i := skipSpace(raw, 1)
	for first := true; i < len(raw) && raw[i] != '}'; first = false {
		if !first {
			i = skipSpace(raw, i+1) // the comma
		}
		m, next, err := scanMember(raw, i)
		if err != nil {
			return nil, false, err
		}
		i = next
		newVal, ch, err := redactMember(m.key, m.val, seg, segs, repl)
		if err != nil {
			return nil, false, err
		}
		changed = changed || ch
		if out == nil {
			out = append(make([]byte, 0, len(raw)+len(repl)), '{')
		} else {
			out = append(out, ',')
		}
		out = m.appendTo(out, newVal)
	}
	if i >= len(raw) {
		return nil, false, errBadJSON
	}
	if !changed {
		return raw, false, nil
	}
	return append(out, '}'), true, nil
}

var errBadJSON = errors.New("malformed JSON")

// plainKey returns a quoted key's text when json.Marshal would write it
// back byte for byte: printable ASCII without escapes or <, >, &.
func plainKey(quoted []byte) (string, bool) {
	in := quoted[1 : len(quoted)-1]
	for _, c := range in {
		if c < 0x20 || c > 0x7e || c == '\\' || c == '<' || c == '>' || c == '&' {
			return "", false
		}
	}
	return string(in), true
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the end of the string starting at b[i] ('"').
func skipString(b []byte, i int) (int, error) {
	if i >= len(b) || b[i] != '"' {
		return 0, errBadJSON
	}
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1, nil
		}
	}
	return 0, errBadJSON
}

// skipValue returns the end of the JSON value starting at b[i].
func skipValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, errBadJSON
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				end, err := skipString(b, i)
				if err != nil {
					return 0, err
				}
				i = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1, nil
				}
			}
		}
		return 0, errBadJSON
	}
	for ; i < len(b); i++ { // number, true, false, null
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i, nil
		}
	}
	return i, nil
}

func redactMember(key string, val []byte, seg segment, segs []segment, repl []byte) ([]byte, bool, error) {
	switch seg.kind {
	case field:
		if key == seg.name {
			return redact(val, segs[1:], repl)
		}
	case wildcard:
		return redact(val, segs[1:], repl)
	case descendant:
		if key == seg.name {
			if len(segs) == 1 {
				return repl, true, nil
			}
			v, ch, err := redact(val, segs[1:], repl)
			if err != nil {
				return nil, false, err
			}
			v2, ch2, err := redact(v, segs, repl) // and deeper matches
			return v2, ch || ch2, err
		}
		return redact(val, segs, repl) // keep looking deeper
	}
	return val, false, nil
}

func redactArray(raw []byte, seg segment, segs []segment, repl []byte) ([]byte, bool, error) {
	if seg.kind == field {
		return raw, false, nil
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		return nil, false, err
	}
	changed := false
	for i, e := range elems {
		var (
			v   []byte
			ch  bool
			err error
		)
		switch seg.kind {
		case index:
			if i != seg.index {
				continue
			}
			v, ch, err = redact(e, segs[1:], repl)
		case wildcard:
			v, ch, err = redact(e, segs[1:], repl)
		case descendant:
			v, ch, err = redact(e, segs, repl)
		}
		if err != nil {
			return nil, false, err
		}
		if ch {
			elems[i], changed = v, true
		}
	}
	if !changed {
		return raw, false, nil
	}
	var out bytes.Buffer
	out.WriteByte('[')
	for i, e := range elems {
		if i > 0 {
			out.WriteByte(',')
		}
		out.Write(e)
	}
	out.WriteByte(']')
	return out.Bytes(), true, nil
}
