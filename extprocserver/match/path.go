package match

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// ErrUnsafePath wraps every reason NormalizePath refuses a path.
var ErrUnsafePath = errors.New("path cannot be normalised safely")

// NormalizePath returns the path rules match on: raw (a :path) without its
// query string and fragment, RFC 3986 normalised as Envoy's normalize_path
// does (percent-encoded unreserved characters decoded, other escapes with
// upper-case hex digits, characters not allowed raw in a path such as
// non-ASCII bytes encoded, dot segments removed) and with duplicate slashes
// merged (Envoy's merge_slashes). Rules see what an upstream that
// normalises would serve, whatever spelling the client chose: "//admin",
// "/%61dmin", "/./admin" and "/x/../admin" are all "/admin".
//
// It refuses (an error wrapping ErrUnsafePath) paths whose meaning depends
// on the upstream: an encoded slash or backslash (%2F, %5C), a backslash,
// an encoded NUL (%00), an invalid escape, a control character or space, a
// path that is not "*" and does not start with "/", and a path mixing
// empty segments with ".." ("/a//../b" is "/a/b" when slashes are merged
// after dot segments, as Envoy does, and "/b" when before).
//
// "" (no :path) and "*" (OPTIONS *) are returned unchanged.
func NormalizePath(raw string) (string, error) {
	p := raw
	if i := strings.IndexAny(p, "?#"); i >= 0 {
		p = p[:i]
	}
	if p == "" || p == "*" {
		return p, nil
	}
	if p[0] != '/' {
		return "", fmt.Errorf("%w: %q does not start with /", ErrUnsafePath, p)
	}
	dec, err := decodeUnreserved(p)
	if err != nil {
		return "", err
	}
	segs := strings.Split(dec[1:], "/")
	if mixesEmptyAndDotDot(segs) {
		return "", fmt.Errorf("%w: %q mixes .. with empty segments (//)", ErrUnsafePath, p)
	}
	// path.Clean merges slashes and removes dot segments; with no empty
	// segment before a "..", that is RFC 3986's remove_dot_segments except
	// for the trailing slash, which RFC 3986 keeps after a final "", "."
	// or "..": "/admin/" and "/admin/x/.." are "/admin/", not "/admin".
	clean := path.Clean(dec)
	if last := segs[len(segs)-1]; (last == "" || last == "." || last == "..") && clean != "/" {
		clean += "/"
	}
	return clean, nil
}

// mixesEmptyAndDotDot tells whether segs has both an empty segment ("//")
// and a "..". A trailing empty segment is the trailing slash, not "//".
func mixesEmptyAndDotDot(segs []string) bool {
	hasEmpty, hasDotDot := false, false
	for i, s := range segs {
		hasEmpty = hasEmpty || (s == "" && i < len(segs)-1)
		hasDotDot = hasDotDot || s == ".."
	}
	return hasEmpty && hasDotDot
}

// decodeUnreserved decodes %XX escapes of unreserved characters (ALPHA,
// DIGIT, "-", ".", "_", "~"), upper-cases the hex digits of the others,
// encodes bytes RFC 3986 does not allow raw in a path and refuses what
// NormalizePath documents. Reserved characters keep their form ("%3B" and
// ";" differ, as in RFC 3986 and Envoy).
func decodeUnreserved(p string) (string, error) {
	var b strings.Builder
	b.Grow(len(p))
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '%':
			d, ok := unescape(p, i)
			if !ok {
				return "", fmt.Errorf("%w: invalid escape at byte %d", ErrUnsafePath, i)
			}
			switch {
			case d == '/' || d == '\\':
				return "", fmt.Errorf("%w: encoded %q at byte %d", ErrUnsafePath, d, i)
			case d == 0:
				return "", fmt.Errorf("%w: encoded NUL at byte %d", ErrUnsafePath, i)
			case unreserved(d):
				b.WriteByte(d)
			default:
				b.WriteString(strings.ToUpper(p[i : i+3]))
			}
			i += 2
		case c == '\\':
			return "", fmt.Errorf("%w: backslash at byte %d", ErrUnsafePath, i)
		case c <= ' ' || c == 0x7f:
			return "", fmt.Errorf("%w: control character or space at byte %d", ErrUnsafePath, i)
		case unreserved(c) || strings.IndexByte("/!$&'()*+,;=:@", c) >= 0:
			b.WriteByte(c)
		default:
			// Not allowed raw in a path (non-ASCII, quotes, braces ...):
			// encoded, as Envoy does, so both spellings read the same.
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String(), nil
}

func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

// unescape decodes the escape "%XX" at p[i]; false when it is not one.
func unescape(p string, i int) (byte, bool) {
	if i+2 >= len(p) {
		return 0, false
	}
	hi, okHi := unhex(p[i+1])
	lo, okLo := unhex(p[i+2])
	return hi<<4 | lo, okHi && okLo
}

// unhex is the value of the hex digit c; false when c is not one.
func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
