package builder

import (
	"regexp"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/builder/buildertest"
	"github.com/portcullis/portcullis/controlplane/internal/builder/httpproxy"
	"github.com/portcullis/portcullis/controlplane/internal/config"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// The :authority condition of a wildcard host admits one label in the
// wildcard's place, in any case, and nothing else. Envoy matches the
// whole value: anchored here as Envoy does.
func TestWildcardAuthority(t *testing.T) {
	m := httpproxy.WildcardAuthority("*.example.com")
	if m.Name != ":authority" || m.Kind != "regex" {
		t.Fatalf("condition %+v, want a regex on :authority", m)
	}
	re := regexp.MustCompile("^(?:" + m.Value + ")$")
	for host, want := range map[string]bool{
		"a.example.com":        true,
		"A.Example.COM":        true,
		"a-1.example.com":      true,
		"b.a.example.com":      false,
		"example.com":          false,
		".example.com":         false,
		"-a.example.com":       false,
		"aexample.com":         false,
		"a.example.com.evil":   false,
		"a.examplexcom":        false,
		"a_b.example.com":      false,
		"a.example.com:8443":   false, // the HCM strips the port before routing
		"a.b.c.d.example.com":  false,
		"a.other.example.org":  false,
		"xa.example.com.a.com": false,
	} {
		if got := re.MatchString(host); got != want {
			t.Errorf("%q matches %q: %v, want %v", m.Value, host, got, want)
		}
	}
}

// A wildcard root is served on its own virtual host, each route with the
// :authority condition (the HTTPS redirects of the HTTP listener too); an
// exact root of a name it covers is its own virtual host, and the routes
// of an HTTPProxy both include have the condition only under the wildcard.
// Duplicate detection takes "*.example.com" as a name of its own.
func TestWildcardRoot(t *testing.T) {
	child := proxy("child", "", 1)
	wild := proxy("wild", "*.Example.com", 1, inc("child", "/child"))
	exact := proxy("exact", "a.example.com", 1, inc("child", "/child"))
	newer := proxy("newer", "*.example.com", 1)
	newer.CreationTimestamp = metav1.NewTime(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	wild.CreationTimestamp = metav1.NewTime(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	res := buildSet([]*contourv1.HTTPProxy{child, wild, exact, newer}, config.Limits{})

	hosts := map[string]*ir.VirtualHost{}
	for _, vh := range res.Model.Listener(ir.HTTPListenerName).Insecure {
		hosts[vh.FQDN] = vh
	}
	if len(hosts) != 2 || hosts["*.example.com"] == nil || hosts["a.example.com"] == nil {
		t.Fatalf("virtual hosts %v, want *.example.com and a.example.com", keys(hosts))
	}
	want := httpproxy.WildcardAuthority("*.example.com")
	for _, r := range hosts["*.example.com"].Routes {
		if !slices.Contains(r.Headers, want) {
			t.Errorf("wildcard route %v %s: headers %+v, want %+v among them", r.PathKind, r.Path, r.Headers, want)
		}
	}
	if n := len(hosts["*.example.com"].Routes); n != 2 {
		t.Errorf("wildcard host has %d routes, want 2 (its own and the child's)", n)
	}
	for _, r := range hosts["a.example.com"].Routes {
		if len(r.Headers) != 0 {
			t.Errorf("exact route %s: headers %+v, want none (the child's conditions are shared)", r.Path, r.Headers)
		}
	}
	for _, o := range res.Status {
		wantReason := ""
		if o.Ref.Name == "newer" {
			wantReason = status.ReasonDuplicateVhost
		}
		if got := buildertest.ReasonOf(o); got != wantReason {
			t.Errorf("%s: reason %q (%v), want %q", o.Ref.Name, got, o.Errors, wantReason)
		}
	}
}

// On the HTTP listener of a TLS wildcard host, the HTTPS redirect keeps
// the :authority condition: b.a.example.com is not redirected to an HTTPS
// host that would not serve it (per route: TestInsecureRoutes).
func TestWildcardRedirects(t *testing.T) {
	routes := httpproxy.WithWildcardAuthority("*.example.com", []httpproxy.Route{{Route: ir.Route{Path: "/a"}}})
	redirects := httpproxy.InsecureRoutes("*.example.com", routes, nil)
	if len(redirects) != 1 || !redirects[0].HTTPSRedirect || !slices.Equal(redirects[0].Headers, []ir.HeaderMatch{httpproxy.WildcardAuthority("*.example.com")}) {
		t.Errorf("redirects %+v, want one HTTPS redirect with the :authority condition", redirects)
	}
	if got := httpproxy.WithWildcardAuthority("a.example.com", routes[:0:0]); len(got) != 0 {
		t.Errorf("exact host: %v", got)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
