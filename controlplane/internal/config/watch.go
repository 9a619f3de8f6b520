package config

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"time"
)

// Watch checks the file every interval and calls update with each new
// valid configuration. An unreadable or invalid file is logged and the
// last good configuration stays in force: a half-edited file never turns
// a protection off. A file written in place can be read half written (an
// empty file is a valid configuration, with every global policy off): a
// new content is applied only once two reads an interval apart agree
// (settled).
func Watch(ctx context.Context, path string, interval time.Duration, log *slog.Logger, last []byte, update func(*Config)) {
	// The path is the operator's own (a flag), not a request's.
	file := filepath.Clean(path)
	t := time.NewTicker(interval)
	defer t.Stop()
	var lastErr string
	s := settled{last: last}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		b, err := os.ReadFile(file)
		if err == nil && !s.next(b) {
			continue
		}
		var c *Config
		if err == nil {
			c, err = Parse(b, path)
		}
		if err != nil {
			if err.Error() != lastErr {
				log.Error("configuration file not applied: keeping the last good configuration", "file", path, "err", err)
				lastErr = err.Error()
			}
			continue
		}
		s.last, lastErr = b, ""
		log.Info("configuration file reloaded", "file", path)
		update(c)
	}
}

// settled tells when a content read is new and read the same twice in a
// row.
type settled struct {
	last    []byte // the content in force
	pending []byte // the new content read last, not yet read twice
	read    bool   // pending was read
}

// next reports whether b, the content just read, is to be applied: new,
// and equal to the previous read. The caller sets last once applied.
func (s *settled) next(b []byte) bool {
	if bytes.Equal(b, s.last) {
		s.pending, s.read = nil, false
		return false
	}
	if !s.read || !bytes.Equal(b, s.pending) {
		s.pending, s.read = b, true
		return false
	}
	s.pending, s.read = nil, false
	return true
}
