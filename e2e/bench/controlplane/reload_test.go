package controlplane

import (
	"testing"
	"time"
)

// TestLoadedColumn: changes whose load time Envoy's stats did not give are
// left out of the median and counted, never printed as a zero time's
// -9223372036854.775 ms.
func TestLoadedColumn(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	for _, tc := range []struct {
		applies []time.Duration
		unread  int
		want    string
	}{
		{[]time.Duration{ms(30), ms(10), ms(20)}, 0, "20.000 ms"},
		{[]time.Duration{ms(30), ms(10)}, 3, "20.000 ms (3 unread)"},
		{nil, 5, "unread (5)"},
	} {
		if got := loadedColumn(tc.applies, tc.unread); got != tc.want {
			t.Errorf("loadedColumn(%v, %d) = %q, want %q", tc.applies, tc.unread, got, tc.want)
		}
	}
}
