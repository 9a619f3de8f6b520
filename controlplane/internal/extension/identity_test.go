package extension

import (
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/proto"

	"github.com/portcullis/portcullis/controlplane/internal/translator"
)

// TestVHostIdentity: a virtual host's request is known by its own fields,
// its routes' version (translator.Versions) and its origins; any of them
// changed is another request, and routes without a version give no
// identity (the request is encoded).
func TestVHostIdentity(t *testing.T) {
	vh := &routev3.VirtualHost{Name: "a.example.com", Domains: []string{"a.example.com"}, Routes: []*routev3.Route{{Name: "r"}}}
	other := proto.Clone(vh).(*routev3.VirtualHost)
	other.Domains = append(other.Domains, "b.example.com")
	base := vhostIdentity(vh, 7, "origins")
	tests := []struct {
		name string
		id   any
		same bool
	}{
		{"the same host, routes and origins", vhostIdentity(proto.Clone(vh).(*routev3.VirtualHost), 7, "origins"), true},
		{"other routes (another version)", vhostIdentity(vh, 8, "origins"), false},
		{"another domain", vhostIdentity(other, 7, "origins"), false},
		{"other origins", vhostIdentity(vh, 7, "others"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.id == nil || (tt.id == base) != tt.same {
				t.Errorf("identity %q, base %q; want the same: %v", tt.id, base, tt.same)
			}
		})
	}
	if id := vhostIdentity(vh, 0, "origins"); id != nil {
		t.Errorf("routes without a version: identity %q, want none", id)
	}
}

// TestKeptVersions: the versions an Apply hands on (to the next extension
// of a Chain) are only those of the messages it kept; a route
// configuration or listener it replaced loses them, so that no one takes
// changed content for the translator's.
func TestKeptVersions(t *testing.T) {
	res := translate(t, fixtureYAML)
	name := translator.HTTPRouteConfigName
	if res.Versions.RouteConfiguration(name) == 0 || res.Versions.Routes(name, "a.example.com") == 0 {
		t.Fatal("the translation has no versions")
	}
	for _, tt := range []struct {
		name    string
		replace bool
	}{{"kept", false}, {"replaced", true}} {
		t.Run(tt.name, func(t *testing.T) {
			out := *res
			out.Routes = append([]proto.Message(nil), res.Routes...)
			for i, m := range out.Routes {
				if tt.replace && translator.ResourceName(m) == name {
					out.Routes[i] = proto.Clone(m)
				}
			}
			kept := keptVersions(res, &out)
			for _, v := range []uint64{kept.RouteConfiguration(name), kept.Routes(name, "a.example.com")} {
				if (v != 0) == tt.replace {
					t.Errorf("version %d; want one only when kept", v)
				}
			}
		})
	}
}
