package translator

import (
	"slices"
	"testing"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"google.golang.org/protobuf/proto"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// Wildcard hosts are Envoy's domain wildcards, and on TLS its SNI
// wildcards; "*" has no SNI match at all. The shared listeners strip the
// request's port before routing: a host is its one domain.
func TestWildcardHosts(t *testing.T) {
	for _, tc := range []struct {
		fqdn        string
		wantDomains []string
		wantMatch   *listenerv3.FilterChainMatch
	}{
		{"a.example.com", []string{"a.example.com"}, &listenerv3.FilterChainMatch{ServerNames: []string{"a.example.com"}}},
		{"*.example.com", []string{"*.example.com"}, &listenerv3.FilterChainMatch{ServerNames: []string{"*.example.com"}}},
		{"*", []string{"*"}, nil},
	} {
		t.Run(tc.fqdn, func(t *testing.T) {
			vh := &ir.SecureVirtualHost{VirtualHost: ir.VirtualHost{FQDN: tc.fqdn, Routes: []*ir.Route{{Path: "/", DirectResponse: &ir.DirectResponse{Status: 200}}}}, Secret: "default/tls"}
			res := Translate(sharedModel([]*ir.VirtualHost{&vh.VirtualHost}, []*ir.SecureVirtualHost{vh}), Options{})
			for _, name := range []string{HTTPRouteConfigName, SecureRouteConfigName(tc.fqdn)} {
				if got := routeConfigNamed(t, res.Routes, name).VirtualHosts[0].Domains; !slices.Equal(got, tc.wantDomains) {
					t.Errorf("%s: domains %v, want %v", name, got, tc.wantDomains)
				}
			}
			chains := listenerNamed(t, res.Listeners, HTTPSListenerName).FilterChains
			if len(chains) != 1 || !proto.Equal(chains[0].FilterChainMatch, tc.wantMatch) {
				t.Errorf("filter chains %v, want one matching %v", chains, tc.wantMatch)
			}
		})
	}
}

func listenerNamed(t *testing.T, ms []proto.Message, name string) *listenerv3.Listener {
	t.Helper()
	for _, m := range ms {
		if ResourceName(m) == name {
			return m.(*listenerv3.Listener)
		}
	}
	t.Fatalf("no listener %s", name)
	return nil
}

// A host matches with any port only where the HCM keeps the port
// (keepHostPort); a wildcard host never gets ":*" (one wildcard per domain).
func TestDomains(t *testing.T) {
	for _, tc := range []struct {
		fqdn string
		keep bool
		want []string
	}{
		{"a.example.com", false, []string{"a.example.com"}},
		{"a.example.com", true, []string{"a.example.com", "a.example.com:*"}},
		{"*.example.com", true, []string{"*.example.com"}},
		{"*", true, []string{"*"}},
	} {
		if got := domains(tc.fqdn, tc.keep); !slices.Equal(got, tc.want) {
			t.Errorf("domains(%q, keepHostPort %v) = %v, want %v", tc.fqdn, tc.keep, got, tc.want)
		}
	}
}
