package httpproxy

import (
	"fmt"
	"slices"
	"strings"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
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
	owners := make(map[string]*contourv1.HTTPProxy, len(roots))
	for _, p := range roots {
		host := strings.ToLower(p.Spec.VirtualHost.Fqdn)
		if host == "" || len(rootNamespaces) > 0 && !slices.Contains(rootNamespaces, p.Namespace) {
			continue
		}
		if o, ok := owners[host]; !ok || core.OlderClaim(p, o) < 0 {
			owners[host] = p
		}
	}
	return owners
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

// rootInput is one root HTTPProxy to build, with the DuplicateVhost
// message it is built with ("" when its FQDN is its own).
type rootInput struct {
	Proxy *contourv1.HTTPProxy
	Dup   string
}

// Roots lists the root HTTPProxies in input order. Which root keeps a
// host name is decided here, across roots (hosts.go): each root's build
// gets its DuplicateVhost message as input.
func Roots(s *core.Snapshot) []rootInput {
	var proxies []*contourv1.HTTPProxy
	for _, p := range s.ServedProxies() {
		if p.Spec.VirtualHost != nil {
			proxies = append(proxies, p)
		}
	}
	owners := hostOwners(proxies, s.Opts.RootNamespaces)
	out := make([]rootInput, len(proxies))
	for i, p := range proxies {
		out[i] = rootInput{Proxy: p, Dup: duplicateHost(p, owners)}
	}
	return out
}
