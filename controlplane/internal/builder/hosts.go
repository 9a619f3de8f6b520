package builder

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
)

// hostOwners decides which root keeps each host name: of the roots
// claiming it, the oldest (creationTimestamp), then the first by namespace
// and name, as the Gateway API resolves conflicts. Contour makes every
// claimant invalid, which lets any namespace take another team's host down
// by claiming it; here a newer HTTPProxy cannot take a host away. Host
// names compare lowercased: Envoy matches domains case-insensitively.
// Roots outside the root namespaces and roots without a host name claim
// nothing (they are never served).
func hostOwners(roots []*contourv1.HTTPProxy, rootNamespaces []string) map[string]*contourv1.HTTPProxy {
	owners := map[string]*contourv1.HTTPProxy{}
	for _, p := range roots {
		host := strings.ToLower(p.Spec.VirtualHost.Fqdn)
		if host == "" || len(rootNamespaces) > 0 && !slices.Contains(rootNamespaces, p.Namespace) {
			continue
		}
		if o, ok := owners[host]; !ok || olderClaim(p, o) < 0 {
			owners[host] = p
		}
	}
	return owners
}

// olderClaim orders claims to a host name (HTTPProxies, Gateways,
// routes), older first. An object without
// a creationTimestamp (read from a file) claims no age: it comes after
// those with one.
func olderClaim(a, b metav1.Object) int {
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

// duplicateHost is the DuplicateVhost message of root p: "" when p keeps
// its host name (or nobody does).
func duplicateHost(p *contourv1.HTTPProxy, owners map[string]*contourv1.HTTPProxy) string {
	o := owners[strings.ToLower(p.Spec.VirtualHost.Fqdn)]
	if o == nil || o == p {
		return ""
	}
	return fmt.Sprintf("fqdn %q is already used by HTTPProxy %s/%s, which keeps it: of the HTTPProxies claiming a host name, the oldest (by creationTimestamp, then namespace/name) serves it",
		p.Spec.VirtualHost.Fqdn, o.Namespace, o.Name)
}
