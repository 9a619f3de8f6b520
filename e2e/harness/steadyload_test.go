package harness

import (
	"context"
	"errors"
	"testing"
	"time"
)

// The longest gap counts a failure that lasts to the end of the load, as
// one between two successes.
func TestSteadyLoadGap(t *testing.T) {
	for _, tc := range []struct {
		name    string
		failing func(since time.Duration) bool
	}{
		{"failing at the end", func(since time.Duration) bool { return since > 200*time.Millisecond }},
		{"failing in the middle", func(since time.Duration) bool { return since > 200*time.Millisecond && since < 800*time.Millisecond }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			r := StartSteadyLoad(2, time.Second, func(context.Context, int) error {
				time.Sleep(5 * time.Millisecond)
				if tc.failing(time.Since(start)) {
					return errors.New("down")
				}
				return nil
			}).Wait()
			if r.Errors == 0 || r.LongestGap < 500*time.Millisecond || r.LongestGap > 2*time.Second {
				t.Errorf("%s; want failures and a gap of about 600-800 ms", r)
			}
		})
	}
}
