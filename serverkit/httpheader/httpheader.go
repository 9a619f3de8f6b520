// Package httpheader says which header names and values are safe to hand
// to Envoy in a mutation. The auth servers and the processing server apply
// the same rules, so a header one accepts the other accepts too.
package httpheader

import (
	"fmt"
	"strings"
)

// MaxValue is the longest header value Envoy accepts in a mutation.
const MaxValue = 16384

// ValidName reports whether name is a non-empty RFC 9110 token (no
// pseudo-header colon, space, control character or separator).
func ValidName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// CheckValue returns an error when v is not safe as a header value: a
// control character other than horizontal tab (CR, LF and NUL would split
// or truncate the header), or more than MaxValue bytes. The error says
// where, without repeating the value (it may be a secret).
func CheckValue(v string) error {
	if len(v) > MaxValue {
		return fmt.Errorf("%d bytes, more than %d", len(v), MaxValue)
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return fmt.Errorf("control character %#02x at byte %d", c, i)
		}
	}
	return nil
}
