package httpheader

import (
	"strings"
	"testing"
)

func TestValidName(t *testing.T) {
	for name, want := range map[string]bool{
		"x-user": true, "X_User.1~": true, "!#$%&'*+-.^_`|~": true,
		"": false, ":path": false, "x user": false, "x/key": false, "x\r\ny": false, "é": false, "x\x00": false,
	} {
		if got := ValidName(name); got != want {
			t.Errorf("ValidName(%q) = %t, want %t", name, got, want)
		}
	}
}

func TestCheckValue(t *testing.T) {
	for v, want := range map[string]string{
		"plain": "", "tab\tinside": "", "ünïcode": "", strings.Repeat("a", MaxValue): "",
		"a\r\nSet-Cookie: x":            "control character 0x0d at byte 1",
		"a\nb":                          "control character 0x0a at byte 1",
		"nul\x00":                       "control character 0x00 at byte 3",
		"del\x7f":                       "control character 0x7f at byte 3",
		strings.Repeat("a", MaxValue+1): "16385 bytes, more than 16384",
	} {
		err := CheckValue(v)
		if got := ""; err != nil {
			got = err.Error()
			if got != want {
				t.Errorf("CheckValue(%.20q) = %q, want %q", v, got, want)
			}
		} else if want != "" {
			t.Errorf("CheckValue(%.20q) = nil, want %q", v, want)
		}
	}
}
