package oidc

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// redirectPolicy decides where post-login and post-logout redirects may
// go: relative paths on this host, or absolute http(s) URLs on allowed
// hosts. Everything a browser might read as another origin is refused.
type redirectPolicy struct {
	hosts []string // "app.example.com" or "*.example.com", lower case
}

func newRedirectPolicy(hosts []string) redirectPolicy {
	p := redirectPolicy{}
	for _, h := range hosts {
		p.hosts = append(p.hosts, strings.ToLower(h))
	}
	return p
}

// maxDecodes is how many percent-decoding passes a redirect target may
// need; each decoded form is checked like the raw one.
const maxDecodes = 3

// check returns nil when target is a safe redirect.
func (p redirectPolicy) check(target string) error {
	if target == "" {
		return errors.New("empty redirect target")
	}
	if err := checkDecodedForms(target); err != nil {
		return err
	}
	if strings.HasPrefix(target, "/") {
		// "//host" is scheme-relative: another origin.
		if strings.HasPrefix(target, "//") {
			return errors.New("redirect target is scheme-relative (//)")
		}
		return nil
	}
	return p.checkAbsolute(target)
}

// checkDecodedForms checks the raw form of target and every percent-decoded
// one, the last included: browsers and upstreams decode, and a tab or
// newline in a URL is dropped by browsers ("/\t/evil" -> "//evil"). A
// target that still changes after maxDecodes passes is refused rather than
// left unchecked.
func checkDecodedForms(target string) error {
	for s, i := target, 0; ; i++ {
		if err := checkChars(s); err != nil {
			return err
		}
		d, err := url.PathUnescape(s)
		if err != nil {
			return fmt.Errorf("redirect target is badly encoded: %w", err)
		}
		if d == s {
			return nil
		}
		if i == maxDecodes {
			return fmt.Errorf("redirect target is percent-encoded more than %d times", maxDecodes)
		}
		s = d
	}
}

// checkChars refuses whitespace, control characters and backslashes, which
// browsers drop or read as slashes.
func checkChars(s string) error {
	if strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return errors.New("redirect target contains whitespace or control characters")
	}
	if strings.Contains(s, `\`) {
		return errors.New(`redirect target contains a backslash`)
	}
	return nil
}

// checkAbsolute checks a target that is not a path: an http(s) URL with
// a host of the policy and no user information.
func (p redirectPolicy) checkAbsolute(target string) error {
	u, err := url.Parse(target)
	if err != nil {
		return fmt.Errorf("redirect target: %w", err)
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return fmt.Errorf("redirect target scheme %q is not http(s)", u.Scheme)
	}
	// "http:/x" and "http:x" have no authority: browsers guess one.
	if !strings.HasPrefix(target[len(u.Scheme)+1:], "//") || u.Host == "" {
		return errors.New("redirect target has no host")
	}
	if u.User != nil || strings.Contains(u.Host, "@") {
		return errors.New("redirect target has user information (@)")
	}
	if !p.allowed(u.Hostname()) {
		return fmt.Errorf("redirect host %q is not allowed", u.Hostname())
	}
	return nil
}

func (p redirectPolicy) allowed(host string) bool {
	host = strings.ToLower(host)
	for _, h := range p.hosts {
		if h == host {
			return true
		}
		if suffix, ok := strings.CutPrefix(h, "*"); ok && strings.HasSuffix(host, suffix) && len(host) > len(suffix) {
			return true
		}
	}
	return false
}
