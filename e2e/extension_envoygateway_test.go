package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/portcullis/portcullis/e2e/harness"
)

// exampleExtPolicy is a policy of Envoy Gateway's example extension's
// group (e2e/testdata/egextension-crds.yaml) in extNS, attached to target.
func exampleExtPolicy(kind, name string, target map[string]any, spec map[string]any) *unstructured.Unstructured {
	spec["targetRefs"] = []any{target}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.extensions.io/v1alpha1",
		"kind":       kind,
		"metadata":   map[string]any{"namespace": extNS, "name": name},
		"spec":       spec,
	}}
}

// TestExtensionEnvoyGatewayDialect runs an extension written against Envoy
// Gateway's published contract (e2e/cmd/egextension: Envoy Gateway's Go
// module, nothing of Portcullis's) through the control plane and a real
// Envoy: its listener hook's basic_auth (built from a policy attached to
// the Gateway), its route hook's header (from a policy attached to the
// HTTPRoute) and its translate hook's cluster all take effect, and its
// nil answers change nothing.
func TestExtensionEnvoyGatewayDialect(t *testing.T) {
	ctx := context.Background()
	repo := harness.RepoRoot(t)
	api := harness.StartAPIServer(t, append(harness.CRDDirs(t), filepath.Join(repo, "e2e/testdata/egextension-crds.yaml"))...)
	extension := harness.BuildBinary(t, "github.com/portcullis/portcullis/e2e/cmd/egextension")
	extAddr := harness.FreeAddr(t)
	harness.StartProcess(t, "egextension", extension, "--listen", extAddr)
	echo := harness.StartEcho(t, "echo")
	waitCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := harness.WaitTCP(waitCtx, extAddr); err != nil {
		t.Fatalf("egextension: %v", err)
	}

	objs := []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: extNS}}}
	objs = append(objs, echoService(extNS, echo)...)
	objs = append(objs,
		gatewayClass("portcullis", gatewayController),
		gateway(gwNS, "gw", "portcullis", httpListener("http", 80, "")),
		httpRoute(extNS, "app", parentRef("gw", "http"), hostnames(extHost), namedRule("all", "echo")),
		exampleExtPolicy("ListenerContextExample", "users", map[string]any{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "gw"},
			map[string]any{"username": "alice", "password": "alice-password"}),
		exampleExtPolicy("RouteContextExample", "header", map[string]any{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": "app"},
			map[string]any{"responseHeaderName": "x-example-policy", "responseHeaderValue": "applied"}),
	)
	if err := api.Apply(ctx, objs...); err != nil {
		t.Fatal(err)
	}

	config := filepath.Join(t.TempDir(), "portcullis.yaml")
	harness.WriteConfigFile(t, config, fmt.Sprintf(`extensions:
- name: example
  address: %s
  dialect: EnvoyGateway
  hooks: [PostRouteModify, PostVirtualHostModify, PostHTTPListenerModify, PostTranslateModify]
  policyResources:
  - {group: example.extensions.io, version: v1alpha1, kind: ListenerContextExample}
  - {group: example.extensions.io, version: v1alpha1, kind: RouteContextExample}
  timeout: 5s
`, extAddr))
	httpAddr, httpsAddr := gatewayEnvoyAddr(t, 80), gatewayEnvoyAddr(t, 443)
	cp := harness.StartControlPlane(t, "portcullis", httpAddr, httpsAddr,
		"--provider", "kubernetes", "--kubeconfig", api.KubeconfigPath,
		"--enable-external-name-services", "--allow-loopback-external-names", "--config", config)
	envoy := harness.StartEnvoyOn(t, cp.XDSAddr)
	g := &gatewayStack{kubeControlPlane: &kubeControlPlane{api: api, httpAddr: httpAddr, httpsAddr: httpsAddr, admin: cp.AdminAddr}}
	g.eventuallyHTTPRoute(t, extNS, "app", "gw", "http", accepted, resolvedRefs)
	c := harness.HTTPClient(httpAddr)
	url := "http://" + extHost + "/"
	alice := "Basic " + base64.StdEncoding.EncodeToString([]byte("alice:alice-password"))

	// The listener hook: no credentials, no entry.
	harness.Eventually(t, 60*time.Second, func() error {
		a, err := do(c, "GET", url)
		if err != nil {
			return err
		}
		if a.status != http.StatusUnauthorized {
			return fmt.Errorf("without credentials: %v, want 401 from the extension's basic_auth", a)
		}
		return nil
	})
	// The route hook's header, and the user the filter forwards.
	a := eventuallyServed(t, c, "echo", "GET", url, "Authorization", alice)
	if got := a.header.Get("X-Example-Policy"); got != "applied" {
		t.Errorf("response header x-example-policy %q, want the RouteContextExample's \"applied\"", got)
	}
	if got := a.echo.Headers.Get("X-Example-Ext"); got != "alice" {
		t.Errorf("upstream got X-Example-Ext %q, want alice (basic_auth's forwarded user)", got)
	}
	if b, err := do(c, "GET", url, "Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("alice:wrong"))); err != nil || b.status != http.StatusUnauthorized {
		t.Errorf("a wrong password: %v, %v; want 401", b, err)
	}
	// The translate hook's cluster reached Envoy.
	harness.Eventually(t, 30*time.Second, func() error {
		dump, err := envoy.ConfigDump()
		if err != nil {
			return err
		}
		if !strings.Contains(string(dump), `"egextension-added"`) {
			return fmt.Errorf("Envoy has no cluster egextension-added")
		}
		return nil
	})
	if n := hookCalls(t, cp.AdminAddr, "example", "error", "timeout", "invalid"); n != 0 {
		t.Errorf("%v failed hook calls", n)
	}
}
