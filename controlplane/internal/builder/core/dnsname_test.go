package core

import (
	"math/rand/v2"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// TestDNSSubdomainErrorsAsKubernetes: the fast path accepts exactly what
// IsDNS1123Subdomain accepts, on edge cases and on random names over the
// characters that matter.
func TestDNSSubdomainErrorsAsKubernetes(t *testing.T) {
	names := []string{
		"", "a", "-", ".", "a.", ".a", "a..b", "a-b", "-a", "a-", "a.-b", "a-.b", "A", "a_b", "a b", "é",
		"host-1.bench.example.com", "*.example.com", "0", "0.0", "a.b.c", "xn--bcher-kva.example",
		strings.Repeat("a", 253), strings.Repeat("a", 254), strings.Repeat("a.", 126) + "a", strings.Repeat("a", 64) + ".com",
	}
	const alphabet = "ab0-.A_*"
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		b := make([]byte, rng.IntN(12))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		names = append(names, string(b))
	}
	for _, n := range names {
		want := validation.IsDNS1123Subdomain(n)
		if got := DNSSubdomainErrors(n); len(got) != len(want) || (len(want) > 0 && got[0] != want[0]) {
			t.Errorf("%q: got %v, want %v", n, got, want)
		}
	}
}
