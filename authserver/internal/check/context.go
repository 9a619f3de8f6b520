package check

import (
	"fmt"
	"net/textproto"
	"slices"
	"strings"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
)

// ContextHeaderPrefix starts the name of every header that carries a
// context extension (an HTTPProxy authPolicy.context entry) upstream.
const ContextHeaderPrefix = "Auth-Context-"

// ContextHeaders turns context extensions into Auth-Context-<Key> headers,
// in key order, skipping keys under reservedPrefix (a backend's own
// settings; "" skips nothing). Keys that canonicalise to the same header
// are joined with ", " as repeated HTTP headers would be. A value that is
// not a safe header value is an error: callers fail closed.
func ContextHeaders(ext map[string]string, reservedPrefix string) ([]Header, error) {
	keys := make([]string, 0, len(ext))
	for k := range ext {
		if reservedPrefix == "" || !strings.HasPrefix(k, reservedPrefix) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var headers []Header
	index := map[string]int{}
	for _, k := range keys {
		if !ValidHeaderValue(ext[k]) {
			return nil, fmt.Errorf("context key %q: value is not a valid header value", k)
		}
		name := ContextHeaderName(k)
		if name == "" {
			continue
		}
		if i, seen := index[name]; seen {
			headers[i].Value += ", " + ext[k]
			continue
		}
		index[name] = len(headers)
		headers = append(headers, Header{Name: name, Value: ext[k]})
	}
	return headers, nil
}

// ContextHeaderName is the header carrying context key k: every character
// other than ASCII letters, digits and '-' becomes '-', then the name is
// canonicalised ("key1" -> "Auth-Context-Key1", "team_name" ->
// "Auth-Context-Team-Name"). It is empty for a key with no letter or digit.
func ContextHeaderName(k string) string {
	b := []byte(k)
	meaningful := false
	for i, c := range b {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
			meaningful = true
		default:
			b[i] = '-'
		}
	}
	if !meaningful {
		return ""
	}
	return textproto.CanonicalMIMEHeaderKey(ContextHeaderPrefix + string(b))
}

// RequestHeader returns the value of request header name (matched
// ignoring case) from the CheckRequest: the headers map, or, when Envoy
// encodes raw header values, the header map. ok is false when absent.
func RequestHeader(req *authv3.CheckRequest, name string) (value string, ok bool) {
	h := req.GetAttributes().GetRequest().GetHttp()
	if v, ok := h.GetHeaders()[strings.ToLower(name)]; ok {
		return v, true
	}
	for _, hv := range h.GetHeaderMap().GetHeaders() {
		if strings.EqualFold(hv.GetKey(), name) {
			if hv.GetRawValue() != nil {
				return string(hv.GetRawValue()), true
			}
			return hv.GetValue(), true
		}
	}
	return "", false
}
