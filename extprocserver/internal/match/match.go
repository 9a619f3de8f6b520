// Package match holds the request matchers shared by the built-in
// processors (deny, routeByHeader), so that rules read the same everywhere.
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
// Regex (RE2, anchored to the whole value).
type String struct {
	Exact    string `json:"exact,omitempty"`
	Prefix   string `json:"prefix,omitempty"`
	Contains string `json:"contains,omitempty"`
	Regex    string `json:"regex,omitempty"`

	re *regexp.Regexp
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
		re, err := regexp.Compile("^(?:" + s.Regex + ")$")
		if err != nil {
			return fmt.Errorf("%s: regex: %w", what, err)
		}
		s.re = re
	}
	return nil
}

func (s *String) match(v string) bool {
	switch {
	case s.Exact != "":
		return v == s.Exact
	case s.Prefix != "":
		return strings.HasPrefix(v, s.Prefix)
	case s.Contains != "":
		return strings.Contains(v, s.Contains)
	default:
		return s.re.MatchString(v)
	}
}

// Header matches a request header: by default its presence; with a String
// matcher, any of its values; with Absent, its absence.
type Header struct {
	Name   string `json:"name"`
	Absent bool   `json:"absent,omitempty"`
	String `json:",inline"`
}

// Rule matches a request when every condition set matches: the path
// (without query string), the method (any of Methods) and every header.
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
		errs = append(errs, r.Path.compile("path"))
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
			errs = append(errs, h.String.compile("headers["+h.Name+"]"))
		}
	}
	return errors.Join(errs...)
}

// Match reports whether the request (as seen in h) matches.
func (r *Rule) Match(h *sdk.Headers) bool {
	if r.Path != nil {
		p, _, _ := strings.Cut(h.Get(":path"), "?")
		if !r.Path.match(p) {
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
			if !slices.ContainsFunc(vals, hm.String.match) {
				return false
			}
		}
	}
	return true
}
