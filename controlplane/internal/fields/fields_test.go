package fields

import (
	"flag"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
)

var update = flag.Bool("update", false, "rewrite "+DocsPage+" and "+GatewayDocsPage+" from the tables")

// TestTableCoversTheTypes walks the Go types: every field path must be in
// the table (a field added to the types, upstream's or ours, must be
// classified before it can be used), except those under a refused field;
// and every entry of the table must be such a path (no entry for a field
// that is gone, or that its refused parent already covers).
func TestTableCoversTheTypes(t *testing.T) {
	for _, k := range Kinds {
		t.Run(k.Kind, func(t *testing.T) {
			rows := map[string]bool{}
			for _, r := range Rows(k.Kind) {
				rows[r.Pattern] = true
				if !r.Known {
					t.Errorf("%s (%s) is not in the table (fields/table.go): classify it, Implemented only if the builder translates it", r.Pattern, r.Type)
				}
			}
			for _, key := range slices.Sorted(maps.Keys(table[k.Kind])) {
				if !rows[key] {
					t.Errorf("the table classifies %s, which is no field path of %s (or is under a refused field)", key, k.Spec)
				}
			}
		})
	}
	if len(table) != len(Kinds) {
		t.Errorf("the table has %d kinds, Kinds %d", len(table), len(Kinds))
	}
}

// TestRefusedFieldsHaveReasons: the reason is what the status and the docs
// say.
func TestRefusedFieldsHaveReasons(t *testing.T) {
	for kind, es := range table {
		for p, s := range es {
			if !s.implemented && strings.TrimSpace(s.why) == "" {
				t.Errorf("%s %s is refused without a reason", kind, p)
			}
		}
	}
}

// withSupport changes the table for one test.
func withSupport(t *testing.T, kind string, changes map[string]*Support) {
	t.Helper()
	saved := table[kind]
	es := maps.Clone(saved)
	for p, s := range changes {
		if s == nil {
			delete(es, p)
		} else {
			es[p] = *s
		}
	}
	table[kind] = es
	forgetPlans()
	t.Cleanup(func() { table[kind] = saved; forgetPlans() })
}

func TestRefuse(t *testing.T) {
	refused := Refused("not here")
	withSupport(t, KindHTTPProxy, map[string]*Support{
		"spec.routes.conditions.header": &refused,
		"spec.virtualhost.tls":          &refused,
		"spec.routes.timeoutPolicy":     nil, // unclassified: refused too
	})
	spec := contourv1.HTTPProxySpec{
		VirtualHost: &contourv1.VirtualHost{Fqdn: "a.example.com", TLS: &contourv1.TLS{SecretName: "s"}},
		Routes: []contourv1.Route{
			{Conditions: []contourv1.MatchCondition{{Prefix: "/"}}},
			{Conditions: []contourv1.MatchCondition{{Prefix: "/x"}, {Prefix: "/y", Header: &contourv1.HeaderMatchCondition{Name: "h", Present: true}}},
				TimeoutPolicy: &contourv1.TimeoutPolicy{}},
		},
		Includes: []contourv1.Include{{Name: "c", Conditions: []contourv1.MatchCondition{{Header: &contourv1.HeaderMatchCondition{Name: "h"}}}}},
	}
	want := []Finding{
		{Path: "spec.virtualhost.tls", Pattern: "spec.virtualhost.tls", Why: "not here"},
		{Path: "spec.routes[1].conditions[1].header", Pattern: "spec.routes.conditions.header", Why: "not here"},
		// Set, though empty: refused like any other value.
		{Path: "spec.routes[1].timeoutPolicy", Pattern: "spec.routes.timeoutPolicy"},
	}
	for _, s := range []any{spec, &spec} {
		if got := Refuse(KindHTTPProxy, s); !reflect.DeepEqual(got, want) {
			t.Errorf("Refuse = %+v\nwant %+v", got, want)
		}
	}
	if got := Refuse(KindHTTPProxy, contourv1.HTTPProxySpec{Routes: []contourv1.Route{{}}}); got != nil {
		t.Errorf("nothing refused set: %+v", got)
	}
	if m := want[1].Message(); !strings.Contains(m, "spec.routes[1].conditions[1].header") || !strings.Contains(m, "not here") {
		t.Errorf("message %q names neither the field nor the reason", m)
	}
}

// BenchmarkRefuse walks a root of the pipeline benchmark's shape (TLS,
// authorization, five routes and an include), nothing refused set: the
// walk every HTTPProxy of every build takes.
func BenchmarkRefuse(b *testing.B) {
	spec := &contourv1.HTTPProxySpec{
		VirtualHost: &contourv1.VirtualHost{Fqdn: "a.example.com", TLS: &contourv1.TLS{SecretName: "tls"},
			Authorization: &contourv1.AuthorizationServer{ExtensionServiceRef: contourv1.ExtensionServiceReference{Name: "auth"}}},
		Includes: []contourv1.Include{{Name: "child", Conditions: []contourv1.MatchCondition{{Prefix: "/child"}}}},
	}
	for r := range 5 {
		spec.Routes = append(spec.Routes, contourv1.Route{Conditions: []contourv1.MatchCondition{{Prefix: "/r" + strconv.Itoa(r)}},
			Services: []contourv1.Service{{Name: "svc", Port: 80}}})
	}
	for b.Loop() {
		if got := Refuse(KindHTTPProxy, spec); got != nil {
			b.Fatal(got)
		}
	}
}

// TestFieldsPage: docs/httpproxy-fields.md is the table's rendering. Run
// with -update to rewrite it after changing the table.
func TestFieldsPage(t *testing.T) {
	path := filepath.Join("..", "..", "..", DocsPage)
	got := Markdown()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/fields -update in controlplane/)", err)
	}
	if string(want) != string(got) {
		t.Errorf("%s is stale: run `go test ./internal/fields -update` in controlplane/ and commit it", DocsPage)
	}
}
