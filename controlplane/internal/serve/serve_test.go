package serve

import (
	"testing"
	"time"
)

func TestDebounceWait(t *testing.T) {
	const d = 100 * time.Millisecond
	for _, tc := range []struct {
		name        string
		since, want time.Duration
	}{
		{"right after a build: a whole debounce", 0, d},
		{"during the debounce: the rest of it, not a whole one more", 30 * time.Millisecond, 70 * time.Millisecond},
		{"after a quiet period: at once", d, 0},
		{"long after: at once", time.Hour, 0},
	} {
		if got := debounceWait(tc.since, d); got != tc.want {
			t.Errorf("%s: debounceWait(%v, %v) = %v, want %v", tc.name, tc.since, d, got, tc.want)
		}
	}
}
