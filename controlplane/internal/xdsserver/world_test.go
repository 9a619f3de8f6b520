package xdsserver

import (
	"fmt"
	"testing"
)

// BenchmarkTableNextOneChange: one route configuration changed among
// 10,001 costs a copy of the index, not a sort of them all.
func BenchmarkTableNextOneChange(b *testing.B) {
	all := map[string]*resource{}
	for i := range 10001 {
		n := fmt.Sprintf("https/h%d.example.com", i)
		all[n] = &resource{name: n}
	}
	t := (*table)(nil).next(all, nil)
	b.ResetTimer()
	for b.Loop() {
		t = t.next(map[string]*resource{"https/h7.example.com": {name: "https/h7.example.com"}}, nil)
	}
}
