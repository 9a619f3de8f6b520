package jsonredact

import (
	"encoding/json"
	"testing"
)

func TestRedact(t *testing.T) {
	for _, tc := range []struct {
		name  string
		paths []string
		in    string
		want  string
	}{
		{"field", []string{"$.password"}, `{"user":"a","password":"s3cret"}`, `{"user":"a","password":"[REDACTED]"}`},
		{"order and untouched bytes kept", []string{"$.b"}, `{"z": 1, "b": {"x":1}, "a": [1, 2]}`, `{"z":1,"b":"[REDACTED]","a":[1, 2]}`},
		{"nested", []string{"$.card.number"}, `{"card":{"number":"4111","exp":"12/30"}}`, `{"card":{"number":"[REDACTED]","exp":"12/30"}}`},
		{"index", []string{"$.list[1]"}, `{"list":["a","b","c"]}`, `{"list":["a","[REDACTED]","c"]}`},
		{"wildcard", []string{"$.users[*].ssn"}, `{"users":[{"ssn":"1","n":1},{"n":2},{"ssn":"3"}]}`, `{"users":[{"ssn":"[REDACTED]","n":1},{"n":2},{"ssn":"[REDACTED]"}]}`},
		{"descendant", []string{"$..token"}, `{"token":"t","a":{"b":[{"token":"u"}]}}`, `{"token":"[REDACTED]","a":{"b":[{"token":"[REDACTED]"}]}}`},
		{"bracket name", []string{"$['odd.key']"}, `{"odd.key":1}`, `{"odd.key":"[REDACTED]"}`},
		{"several paths", []string{"$.a", "$.b"}, `{"a":1,"b":2,"c":3}`, `{"a":"[REDACTED]","b":"[REDACTED]","c":3}`},
		{"no match leaves bytes", []string{"$.nope"}, `{ "a" : 1 }`, `{ "a" : 1 }`},
		{"type mismatch", []string{"$.a.b", "$.a[0]"}, `{"a":"str"}`, `{"a":"str"}`},
		{"array root", []string{"$[0].k"}, `[{"k":1},{"k":2}]`, `[{"k":"[REDACTED]"},{"k":2}]`},
		{"not json", []string{"$.a"}, `a=1&b=2`, `a=1&b=2`},
		{"empty", []string{"$.a"}, ``, ``},
		{"unicode key escaped", []string{"$.é"}, `{"\u00e9":"x"}`, `{"é":"[REDACTED]"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := New(Config{Request: tc.paths})
			if err != nil {
				t.Fatal(err)
			}
			got, changed := p.redactAll([]byte(tc.in), p.req)
			if string(got) != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
			if changed != (tc.in != tc.want) {
				t.Errorf("changed = %v", changed)
			}
			if changed && !json.Valid(got) {
				t.Errorf("output is not valid JSON: %s", got)
			}
		})
	}
}

func TestBadConfig(t *testing.T) {
	for _, c := range []Config{
		{},
		{Request: []string{"password"}},
		{Request: []string{"$"}},
		{Request: []string{"$.a[x]"}},
		{Response: []string{"$['a"}},
		{Response: []string{"$.."}},
	} {
		if _, err := New(c); err == nil {
			t.Errorf("New(%+v) accepted", c)
		}
	}
}

func TestIsJSON(t *testing.T) {
	for ct, want := range map[string]bool{
		"": true, "application/json": true, "application/json; charset=utf-8": true,
		"application/problem+json": true, "text/plain": false, "text/html; charset=x": false, ";;": false,
	} {
		if isJSON(ct) != want {
			t.Errorf("isJSON(%q) = %v", ct, !want)
		}
	}
}
