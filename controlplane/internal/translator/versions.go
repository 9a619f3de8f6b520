package translator

import "sync/atomic"

// Versions name the content of the parts of a translation that Cache
// reuses from one translation to the next: a part translated anew gets a
// version no other part got, and keeps it while Cache reuses it (the
// same messages). What reuses work across translations by message (the
// extension runner) keys it by name and version instead of comparing
// (docs/design/caches.md). A part without a version (0: one Cache does
// not keep, such as a Gateway listener's) is to be compared by content.
// Never modified once built; nil has no versions.
type Versions struct {
	// routes are those of the routes of Envoy virtual hosts, by route
	// configuration and virtual host name; configs those of whole route
	// configurations, and chains those of the HTTPS listener's filter
	// chains, by name.
	routes          map[[2]string]uint64
	configs, chains map[string]uint64
}

// translations hands out versions: one counter for the process, so that
// no two caches give the same version.
var translations atomic.Uint64

// newVersion returns a version no other call returned.
func newVersion() uint64 { return translations.Add(1) }

// newVersions returns empty versions, sized for a translation of that
// many shared and TLS hosts.
func newVersions(shared, secure int) *Versions {
	return &Versions{routes: make(map[[2]string]uint64, shared+secure), configs: make(map[string]uint64, secure+2), chains: make(map[string]uint64, secure)}
}

// Routes is the version of the routes of virtual host vhost of route
// configuration rc: the same version, the same route messages.
func (v *Versions) Routes(rc, vhost string) uint64 {
	if v == nil {
		return 0
	}
	return v.routes[[2]string{rc, vhost}]
}

// RouteConfiguration is the version of route configuration rc as a whole:
// the same version, the same message (a TLS host's is reused while the
// host is unchanged, a shared one is new on every translation).
func (v *Versions) RouteConfiguration(rc string) uint64 {
	if v == nil {
		return 0
	}
	return v.configs[rc]
}

// Chain is the version of the filter chain of that name of the listener
// (a TLS host's of the HTTPS listener): the same version, the same
// message.
func (v *Versions) Chain(listener, chain string) uint64 {
	if v == nil || listener != HTTPSListenerName {
		return 0
	}
	return v.chains[chain]
}

// Kept are the versions of v that still hold for a configuration whose
// route configurations and listeners may have been replaced (by an
// extension): those of the route configurations for which same reports
// true, and the chains' when sameHTTPS (the HTTPS listener is unchanged).
func (v *Versions) Kept(same func(rc string) bool, sameHTTPS bool) *Versions {
	if v == nil {
		return nil
	}
	out := newVersions(len(v.routes), len(v.configs))
	for k, n := range v.routes {
		if same(k[0]) {
			out.routes[k] = n
		}
	}
	for k, n := range v.configs {
		if same(k) {
			out.configs[k] = n
		}
	}
	if sameHTTPS {
		out.chains = v.chains
	}
	return out
}

// addRoutes records the version of a virtual host's routes; a name given
// twice (never expected) has none, so that it is compared by content.
func (v *Versions) addRoutes(rc, vhost string, version uint64) {
	k := [2]string{rc, vhost}
	if _, dup := v.routes[k]; dup {
		version = 0
	}
	v.routes[k] = version
}

// addShared records the versions of the routes of a shared route
// configuration's virtual hosts: those of the first of the hosts merged
// into one (whose routes it carries, mergeIdentical).
func (v *Versions) addShared(rc string, hosts []hostOrigins) {
	// The message is new on every translation.
	v.configs[rc] = newVersion()
	for _, h := range hosts {
		if h.vhost == h.fqdn {
			v.addRoutes(rc, h.vhost, h.routes)
		}
	}
}

// addSecure records the versions of a TLS host's route configuration
// (and its one virtual host's routes) and filter chain.
func (v *Versions) addSecure(h cachedHost) {
	v.configs[h.route.Name] = h.routeVersion
	v.addRoutes(h.route.Name, h.in.FQDN, h.routeVersion)
	v.chains[h.chain.Name] = h.chainVersion
}
