package jsonredact

import (
	"bytes"
	"encoding/json"
	"testing"
)

// redactObjectDecoder is redactObject as first written, on encoding/json's
// Decoder: the reference the scanning version must match byte for byte.
func redactObjectDecoder(raw []byte, seg segment, segs []segment, repl []byte) ([]byte, bool, error) {
	if seg.kind == index {
		return raw, false, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		return nil, false, err
	}
	var out bytes.Buffer
	out.WriteByte('{')
	changed := false
	for first := true; dec.More(); first = false {
		tok, err := dec.Token()
		if err != nil {
			return nil, false, err
		}
		key, _ := tok.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, false, err
		}
		newVal, ch, err := redactMember(key, val, seg, segs, repl)
		if err != nil {
			return nil, false, err
		}
		changed = changed || ch
		if !first {
			out.WriteByte(',')
		}
		k, _ := json.Marshal(key)
		out.Write(k)
		out.WriteByte(':')
		out.Write(newVal)
	}
	if !changed {
		return raw, false, nil
	}
	out.WriteByte('}')
	return out.Bytes(), true, nil
}

var objectDocs = []string{
	`{}`, ` { } `, `{"a":1}`, `{ "password" : "x" , "b" : [1, 2, {"password": true}] }`,
	`{"a":{"b":{"password":"s","c":null}},"password":{"deep":"x"}}`,
	`{"k\"q":"v","password":"a\"b\\","<x>&":1,"é":2,"\u0041":3,"password":-1.5e3}`,
	`{"items":[{"secret":"a"},{"secret":"b","n":[true,false,null]}],"token":"t"}`,
	"{\n\t\"password\":\r\n\"x\"\n}", `{"a":"}]{[","password":"\\"}`,
	`{"users":[{"ssn":"1","name":"a"},{"ssn":"2"}],"card":{"number":"4111"}}`,
}

var objectPaths = []string{"$.password", "$..password", "$.a.b.password", "$.*", "$.items[*].secret", "$..secret",
	"$.users[*].ssn", "$.card.number", "$['k\"q']", "$['<x>&']", "$.items[1].n[0]", "$..n", "$.A"}

// TestRedactObjectMatchesDecoder: the scan gives the Decoder version's
// bytes for every document and path.
func TestRedactObjectMatchesDecoder(t *testing.T) {
	for _, d := range objectDocs {
		if !json.Valid([]byte(d)) {
			t.Fatalf("test document not valid JSON: %s", d)
		}
		for _, p := range objectPaths {
			checkObject(t, d, p)
		}
	}
}

func checkObject(t *testing.T, d, p string) {
	t.Helper()
	segs, err := parsePath(p)
	if err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	raw := bytes.TrimSpace([]byte(d))
	got, gotCh, gotErr := redactObject(raw, segs[0], segs, []byte(`"[R]"`))
	want, wantCh, wantErr := redactObjectDecoder(raw, segs[0], segs, []byte(`"[R]"`))
	if string(got) != string(want) || gotCh != wantCh || (gotErr != nil) != (wantErr != nil) {
		t.Errorf("%s on %s:\n got %s %v %v\nwant %s %v %v", p, d, got, gotCh, gotErr, want, wantCh, wantErr)
	}
}

func FuzzRedactObjectMatchesDecoder(f *testing.F) {
	for _, d := range objectDocs {
		for _, p := range objectPaths {
			f.Add(d, p)
		}
	}
	f.Fuzz(func(t *testing.T, d, p string) {
		raw := bytes.TrimSpace([]byte(d))
		if !json.Valid(raw) || len(raw) == 0 || raw[0] != '{' {
			return
		}
		if _, err := parsePath(p); err != nil {
			return
		}
		checkObject(t, d, p)
	})
}
