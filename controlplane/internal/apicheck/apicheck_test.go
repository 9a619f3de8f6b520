package apicheck

import (
	"strings"
	"testing"
)

// TestParseTimeout: the file accepts every timeout the CRDs accept, and
// "infinity" and "infinite" both mean no timeout.
func TestParseTimeout(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    string // "nil" for unset, else the duration
		wantErr string
	}{
		{"", "nil", ""},
		{"infinity", "0s", ""},
		{"infinite", "0s", ""},
		{"1.5s", "1.5s", ""},
		{"250ms", "250ms", ""},
		{"Infinity", "", "is not a duration"},
		{"-1s", "", "is negative"},
	} {
		d, err := ParseTimeout(tc.in)
		got := "nil"
		if d != nil {
			got = d.String()
		}
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseTimeout(%q) error = %v, want one containing %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseTimeout(%q) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
}
