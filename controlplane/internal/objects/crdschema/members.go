package crdschema

import (
	"encoding/json"
	"errors"
)

// errNotJSON: members found text it cannot read (the caller's text is
// JSON that encoding/json wrote, so it does not happen).
var errNotJSON = errors.New("not a JSON object")

// members calls f with each member of the JSON object text, in order,
// each value as its text. It finds where values start and end without
// decoding them: splitting an object costs a pass over its bytes, where
// encoding/json's two passes and a copy of every value cost more than
// validating the parts it splits (profiled at 10,000 HTTPRoutes).
// notObject: text is JSON of another type (no error).
func members(text []byte, f func(key string, value []byte)) (notObject bool, err error) {
	i := skipSpace(text, 0)
	if i >= len(text) {
		return false, errNotJSON
	}
	if text[i] != '{' {
		return true, nil
	}
	i = skipSpace(text, i+1)
	if i < len(text) && text[i] == '}' {
		return false, nil
	}
	for i < len(text) {
		key, value, next, err := member(text, i)
		if err != nil {
			return false, err
		}
		f(key, value)
		switch i = skipSpace(text, next); {
		case i < len(text) && text[i] == ',':
			i = skipSpace(text, i+1)
		case i < len(text) && text[i] == '}':
			return false, nil
		default:
			return false, errNotJSON
		}
	}
	return false, errNotJSON
}

// member reads the member of an object starting at i: its key, its
// value's text and where the value ends.
func member(text []byte, i int) (key string, value []byte, end int, err error) {
	if text[i] != '"' {
		return "", nil, 0, errNotJSON
	}
	end, escaped := skipString(text, i)
	if end < 0 {
		return "", nil, 0, errNotJSON
	}
	key = string(text[i+1 : end-1])
	if escaped {
		if err := json.Unmarshal(text[i:end], &key); err != nil {
			return "", nil, 0, err
		}
	}
	if i = skipSpace(text, end); i >= len(text) || text[i] != ':' {
		return "", nil, 0, errNotJSON
	}
	i = skipSpace(text, i+1)
	if end = skipValue(text, i); end < 0 {
		return "", nil, 0, errNotJSON
	}
	return key, text[i:end], end, nil
}

func skipSpace(text []byte, i int) int {
	for i < len(text) && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r') {
		i++
	}
	return i
}

// skipString is the end of the string starting at i (text[i] == '"'),
// -1 if it has none, and whether it holds an escape.
func skipString(text []byte, i int) (end int, escaped bool) {
	for i++; i < len(text); i++ {
		switch text[i] {
		case '\\':
			escaped = true
			i++
		case '"':
			return i + 1, escaped
		}
	}
	return -1, escaped
}

// skipValue is the end of the value starting at i, -1 if it has none.
func skipValue(text []byte, i int) int {
	if i >= len(text) {
		return -1
	}
	switch text[i] {
	case '"':
		end, _ := skipString(text, i)
		return end
	case '{', '[':
		return skipComposite(text, i)
	}
	// A number, true, false or null: up to the next delimiter.
	start := i
	for i < len(text) && !delimiter(text[i]) {
		i++
	}
	if i == start {
		return -1
	}
	return i
}

// skipComposite is the end of the object or array starting at i, -1 if
// it has none.
func skipComposite(text []byte, i int) int {
	depth := 0
	for ; i < len(text); i++ {
		switch text[i] {
		case '"':
			end, _ := skipString(text, i)
			if end < 0 {
				return -1
			}
			i = end - 1
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				return i + 1
			}
		}
	}
	return -1
}

func delimiter(b byte) bool {
	switch b {
	case ',', '}', ']', ' ', '\n', '\t', '\r':
		return true
	}
	return false
}
