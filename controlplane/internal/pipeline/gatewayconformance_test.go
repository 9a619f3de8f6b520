package pipeline_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/portcullis/portcullis/controlplane/internal/config"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/pipeline"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// gatewayConformance is the Gateway API conformance suite of the API
// version controlplane/go.mod requires: its manifests are inputs nobody
// here wrote.
const gatewayConformance = "sigs.k8s.io/gateway-api/conformance@v1.6.3"

// conformanceClass is the GatewayClass the suite's manifests name
// ({GATEWAY_CLASS_NAME}); the suite creates it, so the test does.
const conformanceClass = `
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: portcullis}
spec: {controllerName: ` + config.DefaultGatewayControllerName + `}
`

// conformanceExpectations are the conditions the suite's tests expect of
// the objects of some manifests (file, object, condition): those whose
// outcome does not depend on what the suite creates at run time
// (certificates, a cluster's Services).
var conformanceExpectations = []struct {
	file, kind, namespace, name, condition, status, reason string
}{
	{"httproute-simple-same-namespace.yaml", objects.KindHTTPRoute, "gateway-conformance-infra", "gateway-conformance-infra-test", "Accepted", "True", "Accepted"},
	{"httproute-invalid-parentref-not-matching-section-name.yaml", objects.KindHTTPRoute, "gateway-conformance-infra", "httproute-listener-not-matching-section-name", "Accepted", "False", "NoMatchingParent"},
	{"httproute-invalid-parentref-not-matching-listener-port.yaml", objects.KindHTTPRoute, "gateway-conformance-infra", "httproute-listener-not-matching-route-port", "Accepted", "False", "NoMatchingParent"},
	{"httproute-disallowed-kind.yaml", objects.KindHTTPRoute, "gateway-conformance-infra", "disallowed-kind", "Accepted", "False", "NotAllowedByListeners"},
	{"httproute-invalid-cross-namespace-parent-ref.yaml", objects.KindHTTPRoute, "gateway-conformance-web-backend", "invalid-cross-namespace-parent-ref", "Accepted", "False", "NotAllowedByListeners"},
	{"httproute-invalid-nonexistent-backendref.yaml", objects.KindHTTPRoute, "gateway-conformance-infra", "invalid-nonexistent-backend-ref", "ResolvedRefs", "False", "BackendNotFound"},
	{"httproute-invalid-backendref-unknown-kind.yaml", objects.KindHTTPRoute, "gateway-conformance-infra", "invalid-backend-ref-unknown-kind", "ResolvedRefs", "False", "InvalidKind"},
	{"httproute-invalid-cross-namespace-backend-ref.yaml", objects.KindHTTPRoute, "gateway-conformance-infra", "invalid-cross-namespace-backend-ref", "ResolvedRefs", "False", "RefNotPermitted"},
	{"httproute-reference-grant.yaml", objects.KindHTTPRoute, "gateway-conformance-infra", "reference-grant", "ResolvedRefs", "True", "ResolvedRefs"},
	{"httproute-hostname-intersection.yaml", objects.KindHTTPRoute, "gateway-conformance-infra", "no-intersecting-hosts", "Accepted", "False", "NoMatchingListenerHostname"},
	{"httproute-303-redirect.yaml", objects.KindHTTPRoute, "gateway-conformance-infra", "303-redirect", "Accepted", "True", "Accepted"},
	{"httproute-307-redirect.yaml", objects.KindHTTPRoute, "gateway-conformance-infra", "307-redirect", "Accepted", "True", "Accepted"},
	{"httproute-308-redirect.yaml", objects.KindHTTPRoute, "gateway-conformance-infra", "308-redirect", "Accepted", "True", "Accepted"},
	{"httproute-retry.yaml", objects.KindHTTPRoute, "gateway-conformance-infra", "retries", "Accepted", "True", "Accepted"},
	{"httproute-cors.yaml", objects.KindHTTPRoute, "gateway-conformance-infra", "cors-multiple-origins-methods-headers", "Accepted", "True", "Accepted"},
	{"httproute-cors.yaml", objects.KindHTTPRoute, "gateway-conformance-infra", "cors-wildcard-methods-headers", "Accepted", "True", "Accepted"},
	{"httproute-hostname-intersection.yaml", objects.KindHTTPRoute, "gateway-conformance-infra", "wildcard-host-matches-listener-wildcard-host", "Accepted", "True", "Accepted"},
	{"grpcroute-exact-method-matching.yaml", objects.KindGRPCRoute, "gateway-conformance-infra", "exact-matching", "Accepted", "True", "Accepted"},
	{"gateway-invalid-listeners-unsupported-protocol.yaml", objects.KindGateway, "gateway-conformance-infra", "gateway-only-unsupported-protocols", "Accepted", "False", "ListenersNotValid"},
	// Not gateway-supported-and-unsupported-protocols' Accepted: its HTTP
	// listener on port 80 without hostname is the same claim as the base
	// manifests' Gateways', which one Envoy serves for all Gateways: the
	// older one keeps it (HostnameConflict, docs/design/gateway-api.md).
}

// TestGatewayConformanceManifests runs every manifest of the conformance
// suite that holds a Gateway, an HTTPRoute or a GRPCRoute, with the
// suite's base manifests, through the whole pipeline: no input may make
// it panic or fail to render, and the objects get the conditions the
// suite expects where they do not depend on the suite's run
// (conformanceExpectations).
func TestGatewayConformanceManifests(t *testing.T) {
	dir := conformanceDir(t)
	base := readConformance(t, filepath.Join(dir, "base", "manifests.yaml"))
	files, err := filepath.Glob(filepath.Join(dir, "tests", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, f := range files {
		in := readConformance(t, f)
		if !strings.Contains(in, "kind: Gateway\n") && !strings.Contains(in, "kind: HTTPRoute\n") && !strings.Contains(in, "kind: GRPCRoute\n") {
			continue
		}
		ran++
		t.Run(filepath.Base(f), func(t *testing.T) {
			set := &objects.Set{}
			for _, doc := range []struct{ name, body string }{{"class", conformanceClass}, {"base", base}, {filepath.Base(f), in}} {
				if _, err := set.Decode(strings.NewReader(doc.body), doc.name); err != nil {
					t.Fatalf("decoding %s: %v", doc.name, err)
				}
			}
			set.Sort()
			res := pipeline.Run(set, pipeline.DefaultOptions())
			doc, err := pipeline.NewDocument(set, res, goldenNow)
			if err != nil {
				t.Fatalf("rendering: %v", err)
			}
			if _, err := json.Marshal(doc); err != nil {
				t.Fatal(err)
			}
			for _, e := range conformanceExpectations {
				if e.file == filepath.Base(f) {
					checkConformanceCondition(t, res.Build.Status, e.kind, e.namespace, e.name, e.condition, e.status, e.reason)
				}
			}
		})
	}
	if ran < 50 {
		t.Errorf("only %d conformance manifests hold Gateway API objects: the suite's layout changed?", ran)
	}
}

// checkConformanceCondition finds a condition of an object's status: a
// Gateway's own, or every parent's of a route.
func checkConformanceCondition(t *testing.T, objs []*status.Object, kind, namespace, name, typ, wantStatus, wantReason string) {
	t.Helper()
	ref := objects.Ref{Kind: kind, Namespace: namespace, Name: name}
	for _, o := range objs {
		if o.Ref != ref {
			continue
		}
		var sets [][]metav1.Condition
		if kind == objects.KindGateway {
			sets = append(sets, o.GatewayAPI.Conditions)
		}
		for _, p := range o.GatewayAPI.Parents {
			sets = append(sets, p.Conditions)
		}
		if len(sets) == 0 {
			t.Errorf("%s: no conditions", ref)
		}
		for _, cs := range sets {
			c := meta.FindStatusCondition(cs, typ)
			if c == nil || string(c.Status) != wantStatus || c.Reason != wantReason {
				t.Errorf("%s: %s = %+v, want %s/%s", ref, typ, c, wantStatus, wantReason)
			}
		}
		return
	}
	t.Errorf("%s: no status", ref)
}

// readConformance reads a manifest of the suite with its placeholders
// filled in.
func readConformance(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.NewReplacer("{GATEWAY_CLASS_NAME}", "portcullis", "{GATEWAY_CONTROLLER_NAME}", config.DefaultGatewayControllerName).Replace(string(b))
}

// conformanceDir locates the conformance module with `go mod download`
// (from the module cache, or the module proxy).
func conformanceDir(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("go", "mod", "download", "-json", gatewayConformance)
	cmd.Dir = t.TempDir() // outside any module: nothing to edit
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var mod struct{ Dir, Error string }
	if jerr := json.Unmarshal(stdout.Bytes(), &mod); jerr != nil && err == nil {
		err = jerr
	}
	if err != nil || mod.Error != "" || mod.Dir == "" {
		t.Fatalf("cannot locate %s with `go mod download -json` (needs the go command and either the module cache or network access to the module proxy): %v %s\n%s%s",
			gatewayConformance, err, mod.Error, stdout.String(), stderr.String())
	}
	return mod.Dir
}
