package config

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestWatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "portcullis.yaml")
	write := func(s string) {
		t.Helper()
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	first := "globalExtAuth: {extensionService: ns/one}\n"
	write(first)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan *Config, 10)
	go Watch(ctx, path, 10*time.Millisecond, slog.New(slog.NewTextHandler(io.Discard, nil)), []byte(first), func(c *Config) { got <- c }, nil)

	next := func() *Config {
		t.Helper()
		select {
		case c := <-got:
			return c
		case <-time.After(10 * time.Second):
			t.Fatal("no configuration delivered after the file changed")
			return nil
		}
	}
	// A change is delivered.
	write("globalExtAuth: {extensionService: ns/two}\n")
	if _, name := next().GlobalExtAuth.Ref(); name != "two" {
		t.Errorf("delivered %q, want two", name)
	}
	// An invalid file is not delivered; the next valid one is, and nothing
	// in between.
	write("globalExtAuth: {extensionService: broken}\n")
	write("globalExtAuth: {extensionService: ns/broken, typo: true}\n")
	write("globalExtAuth: {extensionService: ns/three}\n")
	if _, name := next().GlobalExtAuth.Ref(); name != "three" {
		t.Errorf("delivered %q, want three (invalid versions are never delivered)", name)
	}
	// A removed file keeps the last configuration.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	// One that lacks the global authorization in force is refused; one
	// that disables it explicitly is delivered.
	write("globalExtProc: {disabled: true}\n")
	write("globalExtAuth: {disabled: true}\nglobalExtProc: {disabled: true}\n")
	if c := next(); !c.GlobalExtAuth.Disabled || c.GlobalExtProc == nil || !c.GlobalExtProc.Disabled {
		t.Errorf("delivered %+v, want globalExtAuth and globalExtProc disabled", c)
	}
}

// A new content is applied only when two reads in a row agree: a file
// read while it is written in place (first empty, then half written) is
// not applied.
func TestSettled(t *testing.T) {
	const good, next = "globalExtAuth: {extensionService: ns/one}\n", "globalExtAuth: {extensionService: ns/two}\n"
	for _, tc := range []struct {
		name  string
		reads []string
		want  []bool
	}{
		{"unchanged", []string{good, good}, []bool{false, false}},
		{"a change applies on its second read", []string{next, next, next}, []bool{false, true, false}},
		{"truncated then written", []string{"", "globalExt", next, next}, []bool{false, false, false, true}},
		{"back to the content in force", []string{"", good, good}, []bool{false, false, false}},
		{"an empty file that stays", []string{"", ""}, []bool{false, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := settled{last: []byte(good)}
			for i, r := range tc.reads {
				got := s.next([]byte(r))
				if got != tc.want[i] {
					t.Fatalf("read %d (%q): apply = %v, want %v", i, r, got, tc.want[i])
				}
				if got {
					s.last = []byte(r)
				}
			}
		})
	}
}
