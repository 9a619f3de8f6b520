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
	go Watch(ctx, path, 10*time.Millisecond, slog.New(slog.NewTextHandler(io.Discard, nil)), []byte(first), func(c *Config) { got <- c })

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
	write("globalExtProc: {disabled: true}\n")
	if c := next(); c.GlobalExtAuth != nil || c.GlobalExtProc == nil || !c.GlobalExtProc.Disabled {
		t.Errorf("delivered %+v, want only globalExtProc disabled", c)
	}
}
