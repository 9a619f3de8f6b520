package config

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"time"
)

// Watch checks the file every interval and calls update with each new
// valid configuration. An unreadable or invalid file is logged and the
// last good configuration stays in force: a half-edited file never turns
// a protection off.
func Watch(ctx context.Context, path string, interval time.Duration, log *slog.Logger, last []byte, update func(*Config)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	var lastErr string
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		b, err := os.ReadFile(path)
		if err == nil && bytes.Equal(b, last) {
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
		last, lastErr = b, ""
		log.Info("configuration file reloaded", "file", path)
		update(c)
	}
}
