package oidc

import "testing"

// One case per pattern the issue names, and the targets that must pass.
func TestRedirectPolicy(t *testing.T) {
	p := newRedirectPolicy([]string{"app.example.com", "*.apps.example.com"})
	for _, tc := range []struct {
		pattern, target string
		ok              bool
	}{
		{"relative path", "/", true},
		{"relative path with query and fragment", "/a/b?c=d&e=%2F#top", true},
		{"encoded slash in a relative path", "/a%2Fb", true},
		{"allowed host", "https://app.example.com/x", true},
		{"allowed host with port, any case", "https://APP.example.com:8443/x", true},
		{"allowed wildcard subdomain", "https://one.apps.example.com/", true},
		{"plain http on an allowed host", "http://app.example.com/", true},

		{"empty", "", false},
		{"scheme-relative //x", "//evil.example/", false},
		{"scheme-relative ///x", "///evil.example/", false},
		{`backslash /\x`, `/\evil.example/`, false},
		{`encoded backslash /%5Cx`, "/%5Cevil.example/", false},
		{"scheme without slashes http:/x", "http:/evil.example/", false},
		{"scheme without slashes https:x", "https:evil.example", false},
		{"userinfo @ before an allowed host", "https://user@app.example.com/", false},
		{"allowed host as userinfo of another", "https://app.example.com@evil.example/", false},
		{"other host", "https://evil.example/", false},
		{"suffix look-alike host", "https://app.example.com.evil.example/", false},
		{"wildcard needs a subdomain", "https://apps.example.com/", false},
		{"javascript scheme", "javascript:alert(1)", false},
		{"data scheme", "data:text/html,<script>alert(1)</script>", false},
		{"ftp scheme", "ftp://app.example.com/", false},
		{"relative path without a leading slash", "evil.example/x", false},
		{"encoded tab /%09/x", "/%09/evil.example", false},
		{"encoded newline (header splitting)", "/%0d%0aSet-Cookie:%20a=b", false},
		{"encoded space", "/%20/evil.example", false},
		{"double-encoded tab", "/%2509/evil.example", false},
		{"triple-encoded tab (the last pass was not checked)", "/%252509/evil.example", false},
		{"triple-encoded newline", "/%25250d%25250aSet-Cookie:a=b", false},
		{"triple-encoded space", "/%252520/evil.example", false},
		{"triple-encoded backslash", "/%25255Cevil.example/", false},
		{"quadruple-encoded tab", "/%25252509/evil.example", false},
		{"still encoded after three passes, harmless", "/a%25252541", false},
		{"triple-encoded, harmless", "/a%252541", true},
		{"double-encoded slash", "/a%252Fb", true},
		{"raw tab", "/\t/evil.example", false},
		{"raw space", "/ /evil.example", false},
		{"NUL", "/x\x00", false},
		{"DEL", "/x\x7f", false},
		{"bad percent encoding", "/%zz", false},
	} {
		t.Run(tc.pattern, func(t *testing.T) {
			err := p.check(tc.target)
			if (err == nil) != tc.ok {
				t.Errorf("check(%q) = %v, want ok=%v", tc.target, err, tc.ok)
			}
		})
	}
}
