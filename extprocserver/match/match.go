// Package match holds the request matchers shared by the built-in
// processors (deny, routeByHeader), so that rules read the same everywhere.
// It is public because their configurations hold its Rule: a Go program
// builds them as the YAML file does.
package match

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/portcullis/portcullis/extprocserver/sdk"
)

// String matches a value: set exactly one of Exact, Prefix, Contains or
// Regex (RE2, anchored to the whole value). Matching is case-sensitive, as
// in Envoy, unless IgnoreCase is set.
type String struct {
	Exact      string `json:"exact,omitempty"`
	Prefix     string `json:"prefix,omitempty"`
	Contains   string `json:"contains,omitempty"`
	Regex      string `json:"regex,omitempty"`
	IgnoreCase bool   `json:"ignoreCase,omitempty"`

	re  *regexp.Regexp
	lit string // Exact, Prefix or Contains, lower-cased with IgnoreCase
}

func (s *String) compile(what string) error {
	n := 0
	for _, v := range []string{s.Exact, s.Prefix, s.Contains, s.Regex} {
		if v != "" {
			n++
		}
	}
	if n != 1 {
		return fmt.Errorf("%s: set exactly one of exact, prefix, contains, regex", what)
	}
	if s.Regex != "" {
		flags := ""
		if s.IgnoreCase {
			flags = "(?i)"
		}
		re, err := regexp.Compile(flags + "^(?:" + s.Regex + ")$")
		if err != nil {
			return fmt.Errorf("%s: regex: %w", what, err)
		}
		s.re = re
	}
	s.lit = s.Exact + s.Prefix + s.Contains // at most one is set
	if s.IgnoreCase {
		s.lit = strings.ToLower(s.lit)
	}
	return nil
}

func (s *String) match(v string) bool {
	if s.re != nil {
		return s.re.MatchString(v)
	}
	if s.IgnoreCase {
		v = strings.ToLower(v)
	}
	switch {
	case s.Exact != "":
		return v == s.lit
	case s.Prefix != "":
		return strings.HasPrefix(v, s.lit)
	default:
		return strings.Contains(v, s.lit)
	}
}

// compilePath is compile for a path condition. An exact or prefix path
// must be normalised (see NormalizePath): requests are compared in that
// form, so "/a//b" or "/a?x=1" would never match and is a startup error.
func (s *String) compilePath() error {
	if err := s.compile("path"); err != nil {
		return err
	}
	for _, c := range [...]struct{ kind, v string }{{"exact", s.Exact}, {"prefix", s.Prefix}} {
		kind, v := c.kind, c.v
		if v == "" {
			continue
		}
		n, err := NormalizePath(v)
		switch {
		case err != nil:
			return fmt.Errorf("path: %s: requests with such a path are refused, so this never matches: %w", kind, err)
		case n != v:
			return fmt.Errorf("path: %s %q never matches: requests are matched on the normalised path; write %q", kind, v, n)
		}
	}
	return nil
}

// Header matches a request header: by default its presence; with a String
// matcher, any of its values; with Absent, its absence.
type Header struct {
	Name   string `json:"name"`
	Absent bool   `json:"absent,omitempty"`
	String `json:",inline"`
}

// Rule matches a request when every condition set matches: the path (the
// normalised path, see NormalizePath), the method (any of Methods) and
// every header.
type Rule struct {
	Path    *String  `json:"path,omitempty"`
	Methods []string `json:"methods,omitempty"`
	Headers []Header `json:"headers,omitempty"`
}

// Compile validates r and prepares its regexes.
func (r *Rule) Compile() error {
	var errs []error
	if r.Path == nil && len(r.Methods) == 0 && len(r.Headers) == 0 {
		errs = append(errs, errors.New("a rule needs at least one of path, methods, headers"))
	}
	if r.Path != nil {
		errs = append(errs, r.Path.compilePath())
	}
	for i, m := range r.Methods {
		r.Methods[i] = strings.ToUpper(m)
	}
	for i := range r.Headers {
		h := &r.Headers[i]
		if h.Name == "" {
			errs = append(errs, fmt.Errorf("headers[%d]: name is required", i))
			continue
		}
		h.Name = strings.ToLower(h.Name)
		empty := h.String == (String{})
		if h.Absent && !empty {
			errs = append(errs, fmt.Errorf("headers[%d] %s: absent excludes a value matcher", i, h.Name))
		} else if !empty {
			errs = append(errs, h.compile("headers["+h.Name+"]"))
		}
	}
	return errors.Join(errs...)
}

// Path is a request's path as rules see it: normalised, or why it cannot
// be. Compute it once per request with RequestPath.
type Path struct {
	Clean string
	Err   error // wraps ErrUnsafePath
}

// RequestPath normalises h's :path (see NormalizePath).
func RequestPath(h *sdk.Headers) Path {
	clean, err := NormalizePath(h.Get(":path"))
	return Path{Clean: clean, Err: err}
}

// OnUnsafePath is what a path condition concludes about a path that cannot
// be normalised safely (Path.Err set).
type OnUnsafePath bool

const (
	// UnsafePathMatches fails closed for deny rules: the path condition
	// holds, so the rule denies when its other conditions do.
	UnsafePathMatches OnUnsafePath = true
	// UnsafePathMisses is for rules that grant something (a route): the
	// path condition does not hold.
	UnsafePathMisses OnUnsafePath = false
)

// Match reports whether the request (as seen in h, with p its
// RequestPath) matches.
func (r *Rule) Match(h *sdk.Headers, p Path, onUnsafe OnUnsafePath) bool {
	if r.Path != nil {
		if p.Err != nil {
			if !onUnsafe {
				return false
			}
		} else if !r.Path.match(p.Clean) {
			return false
		}
	}
	if len(r.Methods) > 0 && !slices.Contains(r.Methods, h.Get(":method")) {
		return false
	}
	for i := range r.Headers {
		hm := &r.Headers[i]
		vals := h.Values(hm.Name)
		switch {
		case hm.Absent:
			if len(vals) > 0 {
				return false
			}
		case hm.String == (String{}):
			if len(vals) == 0 {
				return false
			}
		default:
			if !slices.ContainsFunc(vals, hm.match) {
				return false
			}
		}
	}
	return true
}
