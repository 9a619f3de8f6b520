package oidc

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"
)

func key(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }

func TestSealerRoundTripAndTampering(t *testing.T) {
	s, err := newSealer([][]byte{key(1)})
	if err != nil {
		t.Fatal(err)
	}
	v := s.seal("session", []byte("hello"))
	if got, err := s.open("session", v); err != nil || string(got) != "hello" {
		t.Fatalf("open = %q, %v", got, err)
	}
	if s.seal("session", []byte("hello")) == v {
		t.Error("two seals of the same value are equal: the nonce is not random")
	}
	for name, bad := range map[string]string{
		"flipped byte":     v[:len(v)/2] + string(v[len(v)/2]^1) + v[len(v)/2+1:],
		"truncated":        v[:len(v)-4],
		"empty":            "",
		"not base64":       "***",
		"shorter than IV":  "AAAA",
		"another cookie's": s.seal("session_state", []byte("hello")),
	} {
		if _, err := s.open("session", bad); err == nil {
			t.Errorf("%s: opened", name)
		}
	}
}

func TestSealerKeyRotation(t *testing.T) {
	old, _ := newSealer([][]byte{key(1)})
	rotated, _ := newSealer([][]byte{key(2), key(1)})
	newOnly, _ := newSealer([][]byte{key(2)})
	v := old.seal("s", []byte("x"))
	if _, err := rotated.open("s", v); err != nil {
		t.Errorf("a cookie sealed with the previous key is refused during rotation: %v", err)
	}
	if _, err := newOnly.open("s", v); err == nil {
		t.Error("a cookie sealed with a retired key is accepted")
	}
	if _, err := newOnly.open("s", rotated.seal("s", []byte("x"))); err != nil {
		t.Errorf("rotation seals with the new (first) key: %v", err)
	}
	if _, err := newSealer(nil); err == nil {
		t.Error("no key accepted")
	}
	if _, err := newSealer([][]byte{[]byte("short")}); err == nil {
		t.Error("a 5-byte key accepted")
	}
}

func TestChunkedCookies(t *testing.T) {
	jar := cookieJar{path: "/"}
	for _, tc := range []struct {
		name       string
		size       int
		have       []string // cookie names the request carries
		wantSet    []string
		wantClears []string
	}{
		{"small value, one cookie", 100, nil, []string{"s"}, nil},
		{"exactly the limit", maxChunk, nil, []string{"s"}, nil},
		{"over the limit, chunks", 2*maxChunk + 1, nil, []string{"s_0", "s_1", "s_2"}, nil},
		{"chunks replace a single cookie", maxChunk + 1, []string{"s"}, []string{"s_0", "s_1"}, []string{"s"}},
		{"a single cookie replaces chunks", 10, []string{"s_0", "s_1", "s_2"}, []string{"s"}, []string{"s_0", "s_1", "s_2"}},
		{"fewer chunks clear the extra ones", maxChunk + 1, []string{"s_0", "s_1", "s_2"}, []string{"s_0", "s_1"}, []string{"s_2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			value := strings.Repeat("v", tc.size)
			req := map[string]string{}
			for _, n := range tc.have {
				req[n] = "old"
			}
			lines, err := jar.writeChunked(req, "s", value, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			var set, cleared []string
			for _, l := range lines {
				c, err := http.ParseSetCookie(l)
				if err != nil {
					t.Fatal(err)
				}
				if !c.HttpOnly || !c.Secure || c.SameSite != http.SameSiteLaxMode || c.Path != "/" {
					t.Errorf("cookie %s lacks HttpOnly/Secure/SameSite=Lax/Path: %s", c.Name, l)
				}
				if len(l) > 4000 {
					t.Errorf("Set-Cookie of %d bytes", len(l))
				}
				if c.MaxAge < 0 {
					cleared = append(cleared, c.Name)
				} else {
					set = append(set, c.Name)
					got[c.Name] = c.Value
				}
			}
			if strings.Join(set, ",") != strings.Join(tc.wantSet, ",") || strings.Join(cleared, ",") != strings.Join(tc.wantClears, ",") {
				t.Errorf("set %v cleared %v, want set %v cleared %v", set, cleared, tc.wantSet, tc.wantClears)
			}
			if back, ok := readChunked(got, "s"); !ok || back != value {
				t.Errorf("read back %d bytes, want %d", len(back), len(value))
			}
		})
	}
	if _, err := jar.writeChunked(nil, "s", strings.Repeat("v", maxChunks*maxChunk+1), time.Hour); err == nil {
		t.Error("a value needing more than maxChunks cookies was accepted")
	}
	// Reading stops at the first gap and at maxChunks.
	many := map[string]string{}
	for i := 0; i < maxChunks+3; i++ {
		many[chunkName("s", i)] = "x"
	}
	if v, _ := readChunked(many, "s"); len(v) != maxChunks {
		t.Errorf("read %d chunks, want at most %d", len(v), maxChunks)
	}
	if v, _ := readChunked(map[string]string{"s_0": "a", "s_2": "c"}, "s"); v != "a" {
		t.Errorf("read across a gap: %q", v)
	}
}

func TestParseCookies(t *testing.T) {
	got, dup := parseCookies(`a=1; b="2"; bad name=3; a=other; c=; c=`)
	if got["a"] != "1" || got["b"] != "2" || len(got) != 3 {
		t.Errorf("parseCookies = %v", got)
	}
	if len(dup) != 2 || !dup["a"] || !dup["c"] {
		t.Errorf("duplicated names = %v, want a and c (same value or not)", dup)
	}
	if v, d := parseCookies(""); len(v) != 0 || len(d) != 0 {
		t.Error("cookies from an empty header")
	}
}
