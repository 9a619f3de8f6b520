package config

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"time"
)

// Watch checks the file every interval and calls update with each new
// valid configuration. An unreadable or invalid file is logged and the
// last good configuration stays in force: a half-edited file never turns
// a protection off. A file written in place can be read half written (an
// empty file is valid YAML): a new content is applied only once two reads
// an interval apart agree (settled). A version that lacks a global
// authorization or processing in force (an empty document, a file cut
// short, "globalExtAuth:" with nothing under it) is refused too
// (CheckReload): turning one off takes "disabled: true".
//
// last is the content in force (read at startup). problem, when set, is
// called with why the file on disk is not in force (a *LostSectionError
// for a refused version), and with nil once it is again. Each applied
// version logs one line per section that changed.
func Watch(ctx context.Context, path string, interval time.Duration, log *slog.Logger, last []byte, update func(*Config), problem func(error)) {
	w := &watcher{path: path, log: log, update: update, problem: problem, s: settled{last: last}}
	// The content at startup was checked then: this only fails when the
	// file changed in between, which the first poll reads again.
	w.inForce, _ = Parse(last, path)
	// The path is the operator's own (a flag), not a request's.
	file := filepath.Clean(path)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		b, err := os.ReadFile(file)
		w.poll(b, err)
	}
}

// watcher is Watch's state between polls.
type watcher struct {
	path    string
	log     *slog.Logger
	update  func(*Config)
	problem func(error)
	s       settled
	// inForce is the configuration of s.last (nil when unknown).
	inForce *Config
	// lastErr is why the file is not in force ("" when it is).
	lastErr string
}

// poll handles one read of the file: its content b, or the error reading
// it.
func (w *watcher) poll(b []byte, err error) {
	if err == nil {
		if bytes.Equal(b, w.s.last) {
			// Back to the content in force.
			w.setProblem(nil)
		}
		if !w.s.next(b) {
			return
		}
	}
	var c *Config
	if err == nil {
		c, err = Parse(b, w.path)
	}
	if err == nil {
		err = CheckReload(w.inForce, c, w.path)
	}
	if err != nil {
		w.setProblem(err)
		return
	}
	prev := w.inForce
	w.s.last, w.inForce = b, c
	w.setProblem(nil)
	changes := Changes(prev, c)
	for _, ch := range changes {
		w.log.Info("configuration reloaded", "file", w.path, "section", ch.Section, "change", ch.Change, "value", ch.Value)
	}
	if len(changes) == 0 {
		w.log.Info("configuration reloaded", "file", w.path, "change", "none")
	}
	w.update(c)
}

// setProblem records why the file is not in force (nil: it is), logging
// and reporting each new reason once.
func (w *watcher) setProblem(err error) {
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if msg == w.lastErr {
		return
	}
	w.lastErr = msg
	var lost *LostSectionError
	switch {
	case err == nil:
	case errors.As(err, &lost):
		w.log.Warn("configuration file not applied: it would turn off a global protection without saying so; keeping the last good configuration",
			"file", w.path, "sections", lost.Sections, "err", err)
	default:
		w.log.Error("configuration file not applied: keeping the last good configuration", "file", w.path, "err", err)
	}
	if w.problem != nil {
		w.problem(err)
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
