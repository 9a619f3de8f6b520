package match

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/portcullis/portcullis/extprocserver/sdk"
	"github.com/portcullis/portcullis/extprocserver/sdk/sdktest"
)

// matcher records whether rule matched each request's headers, as a deny
// rule (unsafe paths match) and as a routing rule (they miss).
type matcher struct {
	sdk.Continue
	rule          *Rule
	got, gotRoute bool
}

func (m *matcher) RequestHeaders(_ context.Context, _ *sdk.Exchange, h *sdk.Headers) error {
	p := RequestPath(h)
	m.got = m.rule.Match(h, p, UnsafePathMatches)
	m.gotRoute = m.rule.Match(h, p, UnsafePathMisses)
	return nil
}

// match runs rule on a request with path and method.
func match(t *testing.T, rule Rule, path string) (deny, route bool) {
	t.Helper()
	if err := rule.Compile(); err != nil {
		t.Fatal(err)
	}
	m := &matcher{rule: &rule}
	sdktest.Open(t, sdktest.Serve(t, m)).RoundTrip(sdktest.RequestHeaders(true, ":method", "GET", ":path", path))
	return m.got, m.gotRoute
}

func TestRuleMatch(t *testing.T) {
	req := []string{":method", "GET", ":path", "/admin/users?x=1", "x-debug", "0", "x-debug", "1", "cookie", "a=b; beta=1"}
	for _, tc := range []struct {
		name string
		rule Rule
		want bool
	}{
		{"prefix ignores query", Rule{Path: &String{Prefix: "/admin"}}, true},
		{"exact ignores query", Rule{Path: &String{Exact: "/admin/users"}}, true},
		{"regex is anchored", Rule{Path: &String{Regex: "/admin"}}, false},
		{"regex whole path", Rule{Path: &String{Regex: "/admin/.*"}}, true},
		{"contains", Rule{Path: &String{Contains: "users"}}, true},
		{"method lower-cased in config", Rule{Methods: []string{"post", "get"}}, true},
		{"other method", Rule{Methods: []string{"DELETE"}}, false},
		{"header present", Rule{Headers: []Header{{Name: "X-Debug"}}}, true},
		{"any value matches", Rule{Headers: []Header{{Name: "x-debug", String: String{Exact: "1"}}}}, true},
		{"header absent", Rule{Headers: []Header{{Name: "x-other", Absent: true}}}, true},
		{"header not absent", Rule{Headers: []Header{{Name: "x-debug", Absent: true}}}, false},
		{"missing header", Rule{Headers: []Header{{Name: "x-other"}}}, false},
		{"all conditions", Rule{Path: &String{Prefix: "/admin"}, Methods: []string{"GET"}, Headers: []Header{{Name: "cookie", String: String{Contains: "beta=1"}}}}, true},
		{"one condition fails", Rule{Path: &String{Prefix: "/admin"}, Methods: []string{"PUT"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.rule.Compile(); err != nil {
				t.Fatal(err)
			}
			m := &matcher{rule: &tc.rule}
			sdktest.Open(t, sdktest.Serve(t, m)).RoundTrip(sdktest.RequestHeaders(true, req...))
			if m.got != tc.want {
				t.Errorf("match = %v, want %v", m.got, tc.want)
			}
		})
	}
}

func TestNormalizePath(t *testing.T) {
	for _, tc := range []struct {
		raw, want string
		unsafe    bool
	}{
		{raw: "/admin", want: "/admin"},
		{raw: "", want: ""},
		{raw: "*", want: "*"},
		{raw: "/", want: "/"},
		{raw: "/admin?x=1", want: "/admin"},
		{raw: "/admin#frag", want: "/admin"},
		{raw: "/admin/?x=/../y", want: "/admin/"},
		{raw: "//admin", want: "/admin"},
		{raw: "/admin//users///x", want: "/admin/users/x"},
		{raw: "/%61dmin", want: "/admin"},
		{raw: "/%41%44MIN", want: "/ADMIN"},
		{raw: "/%7e%2D%2e%5F", want: "/~-._"},
		{raw: "/a%3bb%3B", want: "/a%3Bb%3B"},               // reserved: stays encoded, hex upper-cased
		{raw: "/a;b!$&'()*+,=:@", want: "/a;b!$&'()*+,=:@"}, // sub-delims stay raw
		{raw: "/caf\xc3\xa9", want: "/caf%C3%A9"},
		{raw: "/a\"b<c>", want: "/a%22b%3Cc%3E"},
		{raw: "/./admin", want: "/admin"},
		{raw: "/admin/../admin", want: "/admin"},
		{raw: "/x/../admin", want: "/admin"},
		{raw: "/../../admin", want: "/admin"},
		{raw: "/%2e%2e/admin", want: "/admin"},
		{raw: "/x/%2E%2E/admin", want: "/admin"},
		{raw: "/admin/", want: "/admin/"},
		{raw: "/admin/.", want: "/admin/"},
		{raw: "/admin/x/..", want: "/admin/"},
		{raw: "/admin/..", want: "/"},
		{raw: "/..", want: "/"},
		{raw: "/a/.//b", want: "/a/b"},
		{raw: "/a%2Fb", unsafe: true},
		{raw: "/a%2fb", unsafe: true},
		{raw: "/a%5cb", unsafe: true},
		{raw: "/a\\b", unsafe: true},
		{raw: "/a%00b", unsafe: true},
		{raw: "/a%zzb", unsafe: true},
		{raw: "/a%4", unsafe: true},
		{raw: "/a%", unsafe: true},
		{raw: "/a b", unsafe: true},
		{raw: "/a\tb", unsafe: true},
		{raw: "/a\x7fb", unsafe: true},
		{raw: "admin", unsafe: true},
		{raw: "http://x/admin", unsafe: true},
		{raw: "/a//../b", unsafe: true},
		{raw: "/admin//..//x", unsafe: true},
	} {
		got, err := NormalizePath(tc.raw)
		switch {
		case tc.unsafe && !errors.Is(err, ErrUnsafePath):
			t.Errorf("NormalizePath(%q) = %q, %v; want ErrUnsafePath", tc.raw, got, err)
		case !tc.unsafe && (err != nil || got != tc.want):
			t.Errorf("NormalizePath(%q) = %q, %v; want %q", tc.raw, got, err, tc.want)
		}
	}
}

// TestPathRuleSeesTheNormalisedPath: spellings of /admin that used to slip
// past exact and prefix rules, and paths that cannot be normalised, which
// deny rules match (fail closed) and routing rules do not.
func TestPathRuleSeesTheNormalisedPath(t *testing.T) {
	exact := Rule{Path: &String{Exact: "/admin"}}
	prefix := Rule{Path: &String{Prefix: "/admin/"}}
	fold := Rule{Path: &String{Exact: "/admin", IgnoreCase: true}}
	segment := Rule{Path: &String{Regex: "/admin([;/].*)?"}} // from the docs
	for _, tc := range []struct {
		name        string
		rule        Rule
		path        string
		deny, route bool
	}{
		{"exact", exact, "/admin", true, true},
		{"exact with query", exact, "/admin?x=1", true, true},
		{"exact double slash", exact, "//admin", true, true},
		{"exact encoded letter", exact, "/%61dmin", true, true},
		{"exact dot-dot", exact, "/admin/../admin", true, true},
		{"exact dot", exact, "/./admin", true, true},
		{"exact encoded dot-dot", exact, "/x/%2e%2e/admin", true, true},
		{"exact is case-sensitive", exact, "/ADMIN", false, false},
		{"exact other path", exact, "/administrator", false, false},
		{"ignoreCase", fold, "/ADMIN", true, true},
		{"ignoreCase encoded", fold, "/%41dmin?x", true, true},
		{"ignoreCase other path", fold, "/ADMINS", false, false},
		{"prefix", prefix, "/admin/users", true, true},
		{"prefix double slash", prefix, "/admin//users", true, true},
		{"prefix leading double slash", prefix, "//admin/users", true, true},
		{"prefix dot segments", prefix, "/public/../admin/users", true, true},
		{"prefix encoded", prefix, "/%61%64%6d%69%6e/users", true, true},
		{"prefix trailing dot", prefix, "/admin/.", true, true},
		{"prefix escapes root", prefix, "/admin/..", false, false},
		{"exact misses a ; parameter", exact, "/admin;jsessionid=1", false, false},
		{"documented regex covers ; parameters", segment, "/admin;jsessionid=1", true, true},
		{"documented regex covers the segment", segment, "/x/../admin/users", true, true},
		{"documented regex is the segment only", segment, "/administrator", false, false},
		{"encoded slash is unsafe", prefix, "/admin%2Fusers", true, false},
		{"invalid escape is unsafe", exact, "/adm%zzin", true, false},
		{"ambiguous slashes is unsafe", exact, "/x//../admin", true, false},
		{"unsafe path elsewhere", Rule{Path: &String{Prefix: "/admin/"}, Methods: []string{"DELETE"}}, "/%2F", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			deny, route := match(t, tc.rule, tc.path)
			if deny != tc.deny || route != tc.route {
				t.Errorf("%s: deny rule match = %v, routing rule match = %v; want %v, %v", tc.path, deny, route, tc.deny, tc.route)
			}
		})
	}
}

// TestPathRuleMustBeNormalised: exact and prefix paths are compared with
// normalised paths, so one that is not normalised could never match.
func TestPathRuleMustBeNormalised(t *testing.T) {
	for _, tc := range []struct {
		path    String
		wantErr string
	}{
		{String{Exact: "/admin"}, ""},
		{String{Prefix: "/admin/"}, ""},
		{String{Exact: "*"}, ""},
		{String{Exact: "/a%3Bb"}, ""},
		{String{Contains: "//"}, ""}, // not checked: may be part of a path
		{String{Exact: "/a//b"}, `write "/a/b"`},
		{String{Prefix: "/admin?x"}, `write "/admin"`},
		{String{Exact: "/%61dmin"}, `write "/admin"`},
		{String{Exact: "/a%3bb"}, `write "/a%3Bb"`},
		{String{Prefix: "/a/./b"}, `write "/a/b"`},
		{String{Prefix: "/a%2Fb"}, "never matches"},
		{String{Prefix: "admin"}, "never matches"},
	} {
		r := Rule{Path: &tc.path}
		err := r.Compile()
		if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%+v: Compile() = %v, want error containing %q", tc.path, err, tc.wantErr)
		}
	}
}

func TestIgnoreCase(t *testing.T) {
	for _, tc := range []struct {
		s    String
		v    string
		want bool
	}{
		{String{Exact: "Beta"}, "beta", false},
		{String{Exact: "Beta", IgnoreCase: true}, "bETA", true},
		{String{Prefix: "/API/", IgnoreCase: true}, "/api/x", true},
		{String{Contains: "TOKEN", IgnoreCase: true}, "a=token", true},
		{String{Regex: "/Admin/.*", IgnoreCase: true}, "/ADMIN/x", true},
		{String{Regex: "/Admin/.*"}, "/ADMIN/x", false},
	} {
		if err := tc.s.compile("t"); err != nil {
			t.Fatal(err)
		}
		if got := tc.s.match(tc.v); got != tc.want {
			t.Errorf("%+v match %q = %v, want %v", tc.s, tc.v, got, tc.want)
		}
	}
}
