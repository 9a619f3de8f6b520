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
		switch {
		case strings.HasPrefix(rest, ".."):
			name, r := ident(rest[2:])
			if name == "" {
				return nil, fmt.Errorf("path %q: .. needs a field name", p)
			}
			segs, rest = append(segs, segment{kind: descendant, name: name}), r
		case strings.HasPrefix(rest, ".*"):
			segs, rest = append(segs, segment{kind: wildcard}), rest[2:]
		case strings.HasPrefix(rest, "."):
			name, r := ident(rest[1:])
			if name == "" {
				return nil, fmt.Errorf("path %q: . needs a field name", p)
			}
			segs, rest = append(segs, segment{kind: field, name: name}), r
		case strings.HasPrefix(rest, "[*]"):
			segs, rest = append(segs, segment{kind: wildcard}), rest[3:]
		case strings.HasPrefix(rest, "['"):
			end := strings.Index(rest[2:], "']")
			if end < 0 {
				return nil, fmt.Errorf("path %q: unterminated ['", p)
			}
			segs, rest = append(segs, segment{kind: field, name: rest[2 : 2+end]}), rest[2+end+2:]
		case strings.HasPrefix(rest, "["):
			end := strings.IndexByte(rest, ']')
			if end < 0 {
				return nil, fmt.Errorf("path %q: unterminated [", p)
			}
			n, err := strconv.Atoi(rest[1:end])
			if err != nil || n < 0 {
				return nil, fmt.Errorf("path %q: [%s] is not an index, [*] or ['name']", p, rest[1:end])
			}
			segs, rest = append(segs, segment{kind: index, index: n}), rest[end+1:]
		default:
			return nil, fmt.Errorf("path %q: unexpected %q", p, rest)
		}
	}
	if len(segs) == 0 {
		return nil, fmt.Errorf("path %q would redact the whole body", p)
	}
	return segs, nil
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
		kEnd, err := skipString(raw, i)
		if err != nil {
			return nil, false, err
		}
		keyRaw := raw[i:kEnd]
		i = skipSpace(raw, kEnd)
		if i >= len(raw) || raw[i] != ':' {
			return nil, false, errBadJSON
		}
		i = skipSpace(raw, i+1)
		vEnd, err := skipValue(raw, i)
		if err != nil {
			return nil, false, err
		}
		val := raw[i:vEnd]
		i = skipSpace(raw, vEnd)
		key, plain := plainKey(keyRaw)
		if !plain {
			if err := json.Unmarshal(keyRaw, &key); err != nil {
				return nil, false, err
			}
		}
		newVal, ch, err := redactMember(key, val, seg, segs, repl)
		if err != nil {
			return nil, false, err
		}
		changed = changed || ch
		if out == nil {
			out = append(make([]byte, 0, len(raw)+len(repl)), '{')
		} else {
			out = append(out, ',')
		}
		// The key as json.Marshal writes it: as it came when plain.
		if plain {
			out = append(out, keyRaw...)
		} else {
			k, _ := json.Marshal(key)
			out = append(out, k...)
		}
		out = append(out, ':')
		out = append(out, newVal...)
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
