package core

import (
	"cmp"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// OlderClaim orders claims to a host name (HTTPProxies, Gateways,
// routes), older first. An object without
// a creationTimestamp (read from a file) claims no age: it comes after
// those with one.
func OlderClaim(a, b metav1.Object) int {
	at, bt := a.GetCreationTimestamp(), b.GetCreationTimestamp()
	switch {
	case at.IsZero() != bt.IsZero():
		if at.IsZero() {
			return 1
		}
		return -1
	case !at.Equal(&bt):
		return at.Compare(bt.Time)
	}
	return cmp.Or(cmp.Compare(a.GetNamespace(), b.GetNamespace()), cmp.Compare(a.GetName(), b.GetName()))
}
