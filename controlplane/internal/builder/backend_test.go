package builder

import "testing"

// TestExternalNameAllowed: with ExternalName Services on, names that
// resolve to this host are refused, including the aliases of a hosts file
// (Envoy resolves through /etc/hosts: "vm 127.0.0.1" let a route reach
// Envoy's admin interface) and single-label names, which only Envoy's own
// hosts file and search domains give a meaning.
func TestExternalNameAllowed(t *testing.T) {
	o := &Options{ExternalNameServices: true}
	for name, ok := range map[string]bool{
		"db.example.com":              true,
		"api.example.com.":            true,
		"svc.other.svc.cluster.local": true,
		"localhost":                   false,
		"LOCALHOST.":                  false,
		"a.localhost":                 false,
		"localhost.localdomain":       false,
		"localhost4.localdomain4":     false,
		"localhost6":                  false,
		"ip6-localhost":               false,
		"ip6-loopback":                false,
		"vm":                          false,
		"127.0.0.1":                   false,
		"127.1.2.3":                   false,
		"::1":                         false,
		"::ffff:127.0.0.1":            false,
		"0.0.0.0":                     false,
		"169.254.169.254":             false,
	} {
		if err := o.externalNameAllowed(name); (err == nil) != ok {
			t.Errorf("externalNameAllowed(%q) = %v, want allowed %v", name, err, ok)
		}
	}
	o.LoopbackExternalNames = true
	if err := o.externalNameAllowed("localhost"); err != nil {
		t.Errorf("with LoopbackExternalNames: %v", err)
	}
}
