// Package tmpl expands header value templates such as
// "${method} ${path} took ${elapsed_ms}ms" from an sdk.Exchange. Results
// are header values, so they are checked as such (sdk.CheckHeaderValue):
// literal text at Parse, the expansion at Expand.
package tmpl

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/portcullis/portcullis/extprocserver/sdk"
)

// Variables lists what ${...} may name, for errors and docs.
const Variables = "path, method, authority, scheme, request_id, status, elapsed_ms, elapsed_us, start_unix_ms, request_header.NAME, response_header.NAME"

// Template is a parsed value: literal text and variables.
type Template struct {
	parts []part
	plain bool
}

type part struct {
	lit string
	get func(*sdk.Exchange) string
}

// Parse parses s; "$$" is a literal "$".
func Parse(s string) (*Template, error) {
	t := &Template{}
	var lit strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' {
			lit.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == '$' {
			lit.WriteByte('$')
			i++
			continue
		}
		if i+1 >= len(s) || s[i+1] != '{' {
			return nil, fmt.Errorf("%q: a lone $ at %d (write $$ for a literal $)", s, i)
		}
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return nil, fmt.Errorf("%q: unterminated ${", s)
		}
		name := s[i+2 : i+end]
		get, err := variable(name)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", s, err)
		}
		if lit.Len() > 0 {
			t.parts = append(t.parts, part{lit: lit.String()})
			lit.Reset()
		}
		t.parts = append(t.parts, part{get: get})
		i += end
	}
	if lit.Len() > 0 {
		t.parts = append(t.parts, part{lit: lit.String()})
	}
	if err := t.checkLiterals(); err != nil {
		return nil, err
	}
	t.plain = len(t.parts) <= 1 && (len(t.parts) == 0 || t.parts[0].get == nil)
	return t, nil
}

// checkLiterals refuses a literal part that is not a valid header value
// (variables are checked when expanded).
func (t *Template) checkLiterals() error {
	for _, p := range t.parts {
		if err := sdk.CheckHeaderValue(p.lit); p.get == nil && err != nil {
			return fmt.Errorf("not a valid header value: %w", err)
		}
	}
	return nil
}

func variable(name string) (func(*sdk.Exchange) string, error) {
	switch name {
	case "path":
		return (*sdk.Exchange).Path, nil
	case "method":
		return (*sdk.Exchange).Method, nil
	case "authority":
		return (*sdk.Exchange).Authority, nil
	case "scheme":
		return func(x *sdk.Exchange) string { return x.Request(":scheme") }, nil
	case "request_id":
		return (*sdk.Exchange).RequestID, nil
	case "status":
		return func(x *sdk.Exchange) string { return x.Response(":status") }, nil
	case "elapsed_ms":
		return func(x *sdk.Exchange) string { return strconv.FormatInt(x.Elapsed().Milliseconds(), 10) }, nil
	case "elapsed_us":
		return func(x *sdk.Exchange) string { return strconv.FormatInt(x.Elapsed().Microseconds(), 10) }, nil
	case "start_unix_ms":
		return func(x *sdk.Exchange) string { return strconv.FormatInt(x.Start.UnixMilli(), 10) }, nil
	}
	if h, ok := strings.CutPrefix(name, "request_header."); ok && h != "" {
		return func(x *sdk.Exchange) string { return x.Request(h) }, nil
	}
	if h, ok := strings.CutPrefix(name, "response_header."); ok && h != "" {
		return func(x *sdk.Exchange) string { return x.Response(h) }, nil
	}
	return nil, fmt.Errorf("unknown variable ${%s} (known: %s)", name, Variables)
}

// ErrInvalidValue is wrapped by Expand's errors.
var ErrInvalidValue = errors.New("template rendered an invalid header value")

// Expand renders the template for x. It fails when the result is not a
// valid header value (a variable holding CR, LF or NUL, or too long), so
// that callers never send it.
func (t *Template) Expand(x *sdk.Exchange) (string, error) {
	if t.plain {
		if len(t.parts) == 0 {
			return "", nil
		}
		return t.parts[0].lit, nil // checked by Parse
	}
	var b strings.Builder
	for _, p := range t.parts {
		if p.get != nil {
			b.WriteString(p.get(x))
		} else {
			b.WriteString(p.lit)
		}
	}
	v := b.String()
	if err := sdk.CheckHeaderValue(v); err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalidValue, err)
	}
	return v, nil
}
