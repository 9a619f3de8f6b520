package crdschema

import (
	"fmt"
	"strings"
	"testing"
)

// benchRoutes are n HTTPRoutes as the scale benchmark writes them
// (e2e/bench/controlplane): each its own name and hostname, 5 rules to
// Services (20 of them, so the rules' text repeats) and a redirect.
func benchRoutes(n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		var rules []string
		for r := range 5 {
			rules = append(rules, fmt.Sprintf(`{"backendRefs":[{"name":"svc-%d","port":80}],"matches":[{"path":{"type":"PathPrefix","value":"/r%d"}}]}`, (i+r)%20, r))
		}
		rules = append(rules, `{"filters":[{"requestRedirect":{"scheme":"https","statusCode":301},"type":"RequestRedirect"}],"matches":[{"path":{"type":"PathPrefix","value":"/secure"}}]}`)
		out[i] = fmt.Appendf(nil, `{"apiVersion":"gateway.networking.k8s.io/v1","kind":"HTTPRoute","metadata":{"name":"route-%d","namespace":"bench"},"spec":{"hostnames":["route-%d.bench.example.com"],"parentRefs":[{"name":"bench"}],"rules":[%s]}}`, i, i, strings.Join(rules, ","))
	}
	return out
}

// BenchmarkCheck: the check of one HTTPRoute among 10,000 of the scale
// benchmark's (their rules remembered after the first 20).
func BenchmarkCheck(b *testing.B) {
	docs := benchRoutes(10000)
	if _, err := Check(httpRoute, docs[0]); err != nil {
		b.Fatal(err)
	}
	benchCheck(b, docs)
}

// benchCheck checks docs in turn, one per iteration; each must be valid.
func benchCheck(b *testing.B, docs [][]byte) {
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if errs, err := Check(httpRoute, docs[i%len(docs)]); err != nil || len(errs) > 0 {
			b.Fatal(err, errs)
		}
		i++
	}
}

// BenchmarkCheckDistinct: the check of one HTTPRoute whose rules no other
// route shares (each path its own), the worst case for the memo.
func BenchmarkCheckDistinct(b *testing.B) {
	docs := benchRoutes(10000)
	for i := range docs {
		docs[i] = []byte(strings.ReplaceAll(string(docs[i]), `"/r`, fmt.Sprintf(`"/d%d/r`, i)))
	}
	benchCheck(b, docs)
}
