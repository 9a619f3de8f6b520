package httpproxy

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
)

func TestHostOwners(t *testing.T) {
	root := func(ns, name, fqdn string, created int) *contourv1.HTTPProxy {
		p := &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		if created > 0 {
			p.CreationTimestamp = metav1.NewTime(time.Date(2025, 1, created, 0, 0, 0, 0, time.UTC))
		}
		p.Spec.VirtualHost = &contourv1.VirtualHost{Fqdn: fqdn}
		return p
	}
	for _, tc := range []struct {
		name           string
		roots          []*contourv1.HTTPProxy
		rootNamespaces []string
		// want: the owner ("namespace/name") of each root's host, ""
		// for none.
		want []string
	}{
		{"the oldest wins, whatever its name or namespace",
			[]*contourv1.HTTPProxy{root("a", "a", "h.example.com", 3), root("z", "z", "h.example.com", 2), root("m", "m", "h.example.com", 5)},
			nil, []string{"z/z", "z/z", "z/z"}},
		{"same creation time: the first by namespace, then name",
			[]*contourv1.HTTPProxy{root("b", "a", "h.example.com", 1), root("a", "z", "h.example.com", 1), root("a", "y", "h.example.com", 1)},
			nil, []string{"a/y", "a/y", "a/y"}},
		{"host names compare case-insensitively",
			[]*contourv1.HTTPProxy{root("b", "new", "H.Example.COM", 2), root("a", "old", "h.example.com", 1)},
			nil, []string{"a/old", "a/old"}},
		{"different hosts do not conflict",
			[]*contourv1.HTTPProxy{root("a", "x", "x.example.com", 2), root("a", "y", "y.example.com", 1)},
			nil, []string{"a/x", "a/y"}},
		{"no creationTimestamp claims no age",
			[]*contourv1.HTTPProxy{root("a", "a", "h.example.com", 0), root("b", "b", "h.example.com", 9)},
			nil, []string{"b/b", "b/b"}},
		{"outside the root namespaces claims nothing, however old",
			[]*contourv1.HTTPProxy{root("evil", "old", "h.example.com", 1), root("team", "new", "h.example.com", 2)},
			[]string{"team"}, []string{"team/new", "team/new"}},
		{"no host name, no owner",
			[]*contourv1.HTTPProxy{root("a", "a", "", 1), root("b", "b", "", 2)},
			nil, []string{"", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			owners := hostOwners(tc.roots, tc.rootNamespaces)
			for i, p := range tc.roots {
				got := ""
				if o := owners[strings.ToLower(p.Spec.VirtualHost.Fqdn)]; o != nil {
					got = o.Namespace + "/" + o.Name
				}
				if got != tc.want[i] {
					t.Errorf("owner of %s/%s's host = %q, want %q", p.Namespace, p.Name, got, tc.want[i])
				}
				dup := duplicateHost(p, owners)
				if keeps := got == p.Namespace+"/"+p.Name || got == ""; keeps != (dup == "") {
					t.Errorf("%s/%s: DuplicateVhost %q, owner %q", p.Namespace, p.Name, dup, got)
				}
				if dup != "" && !strings.Contains(dup, "already used by HTTPProxy "+got+",") {
					t.Errorf("%s/%s: DuplicateVhost %q does not name the owner %s", p.Namespace, p.Name, dup, got)
				}
			}
		})
	}
}
