package match

import (
	"context"
	"testing"

	"github.com/portcullis/portcullis/extprocserver/sdk"
	"github.com/portcullis/portcullis/extprocserver/sdk/sdktest"
)

// matcher records whether rule matched each request's headers.
type matcher struct {
	sdk.Continue
	rule *Rule
	got  bool
}

func (m *matcher) RequestHeaders(_ context.Context, _ *sdk.Exchange, h *sdk.Headers) error {
	m.got = m.rule.Match(h)
	return nil
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
