package htpasswd

import (
	"context"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

// BenchmarkCheckWarm is the in-process cost of a cache hit (no gRPC).
func BenchmarkCheckWarm(b *testing.B) {
	s, _, _ := newServer(b, Options{}, "alice:"+bcryptHash(b, "secret", bcrypt.MinCost))
	req := checkReq(basic("alice", "secret"), map[string]string{"team": "a"}, nil)
	if _, err := s.Check(context.Background(), req); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if resp, _ := s.Check(context.Background(), req); resp.GetStatus().GetCode() != 0 {
				b.Fatal("denied")
			}
		}
	})
}
