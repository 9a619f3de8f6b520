package crdschema

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzMembers: members splits what encoding/json reads as an object into
// the same members, and never panics on anything else (its seeds run with
// go test).
func FuzzMembers(f *testing.F) {
	for _, s := range []string{
		`{}`, ` { "a" : 1 , "b":[1,{"c":"]}"}], "d\"e": "x\\"}`, `{"spec": {"rules": [{"x": null}], "h": ["a,b"]}, "kind": "K"}`,
		`{"a": true, "b": false, "c": -1.5e3, "d": "\u00e9"}`, `[1]`, `"s"`, `{"a"`, `{"a":}`, `{"a":1,}`, `{"a" 1}`, `{"a":[}`, ``, `{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		got := map[string][]byte{}
		notObject, err := members(text, func(k string, v []byte) { got[k] = v })
		var want map[string]json.RawMessage
		if json.Unmarshal(text, &want) != nil || want == nil {
			return // not an object: members may say anything but panic
		}
		if err != nil || notObject {
			t.Fatalf("members(%q): %v, not an object %v", text, err, notObject)
		}
		if len(got) != len(want) {
			t.Fatalf("members(%q) = %q, want %q", text, got, want)
		}
		for k, v := range want {
			if !bytes.Equal(bytes.TrimSpace(got[k]), bytes.TrimSpace(v)) {
				t.Errorf("members(%q)[%q] = %q, want %q", text, k, got[k], v)
			}
		}
	})
}
