package translator

import (
	"testing"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// TestCacheVersions: a host's translation is reused for a host of the same
// version without comparing, and for one of another version (or none) only
// when its content is equal; a host built again gets a new version
// (ir.VirtualHost.Stamp), so no content change can keep a version.
func TestCacheVersions(t *testing.T) {
	host := func(path string, stamp bool) *ir.SecureVirtualHost {
		vh := &ir.SecureVirtualHost{VirtualHost: ir.VirtualHost{FQDN: "a.example.com",
			Routes: []*ir.Route{{Path: path, Clusters: []ir.WeightedCluster{{Cluster: "default/svc/80", Weight: 1}}}}}, Secret: "default/tls"}
		if stamp {
			vh.Stamp()
		}
		return vh
	}
	first := host("/", true)
	tests := []struct {
		name   string
		next   *ir.SecureVirtualHost
		reused bool
	}{
		{"the same host (same version)", first, true},
		{"built again, equal (new version)", host("/", true), true},
		{"built again, changed (new version)", host("/changed", true), false},
		{"unversioned, equal", host("/", false), true},
		{"unversioned, changed", host("/changed", false), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCache()
			model := func(vh *ir.SecureVirtualHost) *ir.Model {
				return sharedModel([]*ir.VirtualHost{&vh.VirtualHost}, []*ir.SecureVirtualHost{vh})
			}
			TranslateCached(model(first), Options{}, c)
			insecure, ok := c.vhostRoutes(&tt.next.VirtualHost, httpRouteSettings(globalHCM(model(tt.next)).withRoutes(model(tt.next).Listeners[0].Insecure), Options{}))
			checkUncached(t, TranslateCached(model(tt.next), Options{}, c), Translate(model(tt.next), Options{}))
			if got := c.Hits == 1; got != tt.reused || ok != tt.reused {
				t.Errorf("TLS host reused %v, routes reused %v (%v); want %v", got, ok, insecure.routes, tt.reused)
			}
		})
	}
	if a, b := host("/", true), host("/", true); a.Version() == b.Version() || a.Version() == 0 {
		t.Errorf("two stamps gave versions %d and %d", a.Version(), b.Version())
	}
}
