package fields

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/portcullis/portcullis/controlplane/internal/provider/file"
)

// TestGatewayTableCoversTheTypes walks the Gateway API types (upstream's,
// at the version in go.mod, and gateway.portcullis.dev's): every field
// path must be in gateway_table.go, except those under a refused or
// ignored field; and every entry must be such a path. A gateway-api
// upgrade that adds a field fails here until someone reads what the
// builder does with it and classifies it.
func TestGatewayTableCoversTheTypes(t *testing.T) {
	for _, k := range GatewayKinds {
		t.Run(k.Kind, func(t *testing.T) {
			rows := map[string]bool{}
			for _, r := range GatewayRows(k.Kind) {
				rows[r.Pattern] = true
				if !r.Known {
					t.Errorf("%s (%s) is not in the table (fields/gateway_table.go): classify it as the builder (builder/gateway*.go) treats it", r.Pattern, r.Type)
				}
			}
			for _, key := range slices.Sorted(maps.Keys(gatewayTable[k.Kind])) {
				if !rows[key] {
					t.Errorf("the table classifies %s, which is no field path of %s (or is under a refused or ignored field)", key, k.Spec)
				}
			}
		})
	}
	if len(gatewayTable) != len(GatewayKinds) {
		t.Errorf("the Gateway API table has %d kinds, GatewayKinds %d", len(gatewayTable), len(GatewayKinds))
	}
}

// TestGatewayRefusedAndIgnoredFieldsHaveReasons: the reason is what the
// docs say.
func TestGatewayRefusedAndIgnoredFieldsHaveReasons(t *testing.T) {
	for kind, es := range gatewayTable {
		for p, s := range es {
			if !s.implemented && strings.TrimSpace(s.why) == "" {
				t.Errorf("%s %s is refused or ignored without a reason", kind, p)
			}
		}
	}
}

// TestEveryImplementedGatewayFieldHasAGolden: every implemented field of
// the table is set by some golden input of the pipeline's tests (or is a
// known gap, listed above).
func TestEveryImplementedGatewayFieldHasAGolden(t *testing.T) {
	set := goldenGatewayPatterns(t)
	for _, k := range GatewayKinds {
		gaps := map[string]bool{}
		for _, p := range gatewayGoldenGaps[k.Kind] {
			gaps[p] = true
		}
		for _, r := range GatewayRows(k.Kind) {
			switch {
			case !r.Support.implemented:
			case set[k.Kind][r.Pattern] && gaps[r.Pattern]:
				t.Errorf("%s %s is set by a golden input now: remove it from gatewayGoldenGaps", k.Kind, r.Pattern)
			case !set[k.Kind][r.Pattern] && !gaps[r.Pattern]:
				t.Errorf("%s %s is implemented but no golden input sets it: add it to a pipeline/testdata/<case>/in.yaml (or, for now, to gatewayGoldenGaps)", k.Kind, r.Pattern)
			}
			delete(gaps, r.Pattern)
		}
		for _, p := range slices.Sorted(maps.Keys(gaps)) {
			t.Errorf("gatewayGoldenGaps lists %s %s, which is no implemented field", k.Kind, p)
		}
	}
}

// goldenGatewayPatterns collects, by kind, the Gateway API field patterns
// that the golden inputs set.
func goldenGatewayPatterns(t *testing.T) map[string]map[string]bool {
	t.Helper()
	testdata := filepath.Join("..", "pipeline", "testdata")
	ins, err := filepath.Glob(filepath.Join(testdata, "*", "in.yaml"))
	if err != nil || len(ins) == 0 {
		t.Fatalf("no golden inputs in %s: %v", testdata, err)
	}
	out := map[string]map[string]bool{}
	add := func(kind string, spec any) {
		if out[kind] == nil {
			out[kind] = map[string]bool{}
		}
		for _, p := range GatewaySetPatterns(spec) {
			out[kind][p] = true
		}
	}
	for _, in := range append(ins, filepath.Join(testdata, "common")) {
		set, _, err := file.Load([]string{in})
		if err != nil {
			continue // a case of a file that cannot be read
		}
		for _, o := range set.GatewayClasses {
			add(KindGatewayClass, o.Spec)
		}
		for _, o := range set.Gateways {
			add(KindGateway, o.Spec)
		}
		for _, o := range set.HTTPRoutes {
			add(KindHTTPRoute, o.Spec)
		}
		for _, o := range set.GRPCRoutes {
			add(KindGRPCRoute, o.Spec)
		}
		for _, o := range set.TLSRoutes {
			add(KindTLSRoute, o.Spec)
		}
		for _, o := range set.ListenerSets {
			add(KindListenerSet, o.Spec)
		}
		for _, o := range set.TCPRoutes {
			add(KindTCPRoute, o.Spec)
		}
		for _, o := range set.UDPRoutes {
			add(KindUDPRoute, o.Spec)
		}
		for _, o := range set.ReferenceGrants {
			add(KindReferenceGrant, o.Spec)
		}
		for _, o := range set.ExtAuthPolicies {
			add(KindExtAuthPolicy, o.Spec)
		}
		for _, o := range set.ExtProcPolicies {
			add(KindExtProcPolicy, o.Spec)
		}
	}
	return out
}

// TestGatewayFieldsPage: docs/gateway-api-fields.md is the table's
// rendering. Run with -update to rewrite it after changing the table.
func TestGatewayFieldsPage(t *testing.T) {
	path := filepath.Join("..", "..", "..", GatewayDocsPage)
	got := GatewayMarkdown()
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
		t.Errorf("%s is stale: run `go test ./internal/fields -update` in controlplane/ and commit it", GatewayDocsPage)
	}
}
