package core

import (
	"strings"
	"testing"
)

// Envoy refuses a regular expression whose RE2 program is larger than
// 100 instructions (its default re2.max_program_size.error_level), and
// with it the whole route configuration: every host of the listener.
// The sizes in the comments are those Envoy reported.
func TestRegexValidProgramSize(t *testing.T) {
	alternatives := make([]string, 60)
	for i := range alternatives {
		alternatives[i] = "a" + strings.Repeat("b", i%3) + string(rune('0'+i%10)) + string(rune('a'+i/10))
	}
	for _, tc := range []struct {
		re string
		ok bool
	}{
		{"/api/v[0-9]+/users/[^/]+/orders", true}, // 29
		{`.*\.(png|jpg|gif|css|js)`, true},        // 23
		{"a{50}", true},                           // 54
		{".{30}", true},                           // 64
		{"[^a]{20}", true},                        // 44
		{"a{100}", false},                         // 104
		{"/[a-zA-Z0-9_-]{1,64}", false},           // 324
		{"/(" + strings.Join(alternatives, "|") + ")", false},
		{"(a{40}){3}", false},
	} {
		err := RegexValid(tc.re)
		if (err == nil) != tc.ok {
			t.Errorf("regexValid(%q) = %v, want ok %v", tc.re, err, tc.ok)
		}
	}
}
