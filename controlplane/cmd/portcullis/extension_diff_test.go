package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/portcullis/portcullis/extension/api/v1alpha1"
	"github.com/portcullis/portcullis/extension/sdk"
	"github.com/portcullis/portcullis/extension/sdk/sdktest"
)

// diffResources are two HTTPProxies over plain HTTP: the virtual hosts
// a.example.com and b.example.com of RouteConfiguration ingress_http.
const diffResources = `
apiVersion: v1
kind: Service
metadata: {name: echo, namespace: default}
spec:
  ports: [{name: http, port: 80}]
---
apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {name: a, namespace: default}
spec:
  virtualhost: {fqdn: a.example.com}
  routes: [{services: [{name: echo, port: 80}]}]
---
apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {name: b, namespace: default}
spec:
  virtualhost: {fqdn: b.example.com}
  routes: [{conditions: [{prefix: /b}], services: [{name: echo, port: 80}]}]
`

// tagAExtension adds the response header x-ext to a.example.com's virtual
// host only, and adds the cluster ext-added; with failVHosts its
// PostVirtualHostModify fails instead.
func tagAExtension(t *testing.T, failVHosts bool) string {
	return sdktest.Listen(t, &sdk.Server{
		VirtualHostModify: func(_ context.Context, req *v1alpha1.PostVirtualHostModifyRequest) (*v1alpha1.PostVirtualHostModifyResponse, error) {
			if failVHosts {
				return nil, grpcstatus.Error(codes.Unavailable, "the tag store is down")
			}
			vh := req.GetVirtualHost()
			if vh.GetName() == "a.example.com" {
				vh.ResponseHeadersToAdd = append(vh.ResponseHeadersToAdd, &corev3.HeaderValueOption{Header: &corev3.HeaderValue{Key: "x-ext", Value: "tagged"}})
			}
			return &v1alpha1.PostVirtualHostModifyResponse{VirtualHost: vh}, nil
		},
		TranslateInsert: func(context.Context, *v1alpha1.PostTranslateInsertRequest) (*v1alpha1.PostTranslateInsertResponse, error) {
			return &v1alpha1.PostTranslateInsertResponse{Clusters: []*clusterv3.Cluster{{
				Name: "ext-added", ConnectTimeout: durationpb.New(1e9),
				ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC},
			}}}, nil
		},
	})
}

// writeDiffInputs writes the resources and a configuration file
// registering the extension at addr (policy Open or Closed).
func writeDiffInputs(t *testing.T, addr, policy string) (cfg, resources string) {
	t.Helper()
	dir := t.TempDir()
	resources = filepath.Join(dir, "resources.yaml")
	cfg = filepath.Join(dir, "portcullis.yaml")
	if err := os.WriteFile(resources, []byte(diffResources), 0o600); err != nil {
		t.Fatal(err)
	}
	c := fmt.Sprintf("extensions:\n- {name: tagger, address: %q, hooks: [PostTranslateInsert, PostVirtualHostModify], failurePolicy: %s, timeout: 5s}\n", addr, policy)
	if err := os.WriteFile(cfg, []byte(c), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg, resources
}

// TestShowExtensionDiff: translate --show-extension-diff calls the
// registered extension once and prints the virtual host it changed, with
// the diff's lines, and the cluster it added; nothing else.
func TestShowExtensionDiff(t *testing.T) {
	cfg, resources := writeDiffInputs(t, tagAExtension(t, false), "Open")
	out, errOut, err := run("translate", "--config", cfg, "--show-extension-diff", "-f", resources)
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, out, errOut)
	}
	for _, w := range []string{
		`extension "tagger"`,
		`changed: virtual host "a.example.com" of RouteConfiguration "ingress_http"`,
		"--- before\n", "+++ after\n",
		"+responseHeadersToAdd:", "+    key: x-ext", "+    value: tagged",
		`added: Cluster "ext-added"`, "    name: ext-added",
		"0 failures",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, `"b.example.com"`) {
		t.Errorf("the unchanged virtual host is reported:\n%s", out)
	}
	if strings.Contains(out, "status:") {
		t.Errorf("the document is printed too:\n%s", out)
	}
}

// A failing hook is printed with its hook, resource, outcome, gRPC code
// and message, and translate exits non-zero; under Closed the report says
// nothing would be published.
func TestShowExtensionDiffFailure(t *testing.T) {
	for _, policy := range []string{"Open", "Closed"} {
		t.Run(policy, func(t *testing.T) {
			cfg, resources := writeDiffInputs(t, tagAExtension(t, true), policy)
			out, _, err := run("translate", "--config", cfg, "--show-extension-diff", "-f", resources)
			if err == nil || !strings.Contains(err.Error(), "2 extension hook call(s) failed") {
				t.Errorf("error = %v, want 2 failed calls (one per virtual host)", err)
			}
			for _, w := range []string{
				`failed: hook PostVirtualHostModify for virtual host "a.example.com" of RouteConfiguration "ingress_http": error (gRPC code Unavailable): the tag store is down`,
				`failed: hook PostVirtualHostModify for virtual host "b.example.com" of RouteConfiguration "ingress_http"`,
				"failurePolicy " + policy + ":",
			} {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if added := strings.Contains(out, `added: Cluster "ext-added"`); added != (policy == "Open") {
				t.Errorf("cluster reported added: %v under %s:\n%s", added, policy, out)
			}
		})
	}
}

// Without registered extensions the flag is an error that says so.
func TestShowExtensionDiffNeedsExtensions(t *testing.T) {
	const example = "../../../examples/quickstart/"
	_, _, err := run("translate", "--show-extension-diff", "-f", example)
	if err == nil || !strings.Contains(err.Error(), "--show-extension-diff: no extensions registered: give a --config file with an extensions: section") {
		t.Errorf("without --config: error = %v", err)
	}
	cfg := filepath.Join(t.TempDir(), "portcullis.yaml")
	if err := os.WriteFile(cfg, []byte("limits: {maxIncludeDepth: 3}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err = run("translate", "--config", cfg, "--show-extension-diff", "-f", example)
	if err == nil || !strings.Contains(err.Error(), "has no extensions: section") {
		t.Errorf("--config without extensions: error = %v", err)
	}
}

// Without the flag, translate does not call the registered extensions.
func TestTranslateDoesNotCallExtensions(t *testing.T) {
	var calls atomic.Int32
	addr := sdktest.Listen(t, &sdk.Server{
		VirtualHostModify: func(_ context.Context, req *v1alpha1.PostVirtualHostModifyRequest) (*v1alpha1.PostVirtualHostModifyResponse, error) {
			calls.Add(1)
			return &v1alpha1.PostVirtualHostModifyResponse{VirtualHost: req.GetVirtualHost()}, nil
		},
	})
	cfg, resources := writeDiffInputs(t, addr, "Closed")
	if _, errOut, err := run("translate", "--config", cfg, "-f", resources); err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("translate without --show-extension-diff called the extension %d times", n)
	}
	if _, _, err := run("translate", "--config", cfg, "--show-extension-diff", "-f", resources); err != nil {
		t.Fatal(err)
	}
	if calls.Load() == 0 {
		t.Error("--show-extension-diff did not call the extension")
	}
}

// An extension registered through an ExtensionService (extensionService:)
// is called, as serve calls it, at the endpoints the same files give that
// ExtensionService: translate --show-extension-diff runs the stage serve
// runs, inputs included, so its report is what serve would publish.
func TestShowExtensionDiffThroughExtensionService(t *testing.T) {
	addr := tagAExtension(t, false)
	host, port, _ := strings.Cut(addr, ":")
	dir := t.TempDir()
	resources := filepath.Join(dir, "resources.yaml")
	cfg := filepath.Join(dir, "portcullis.yaml")
	in := diffResources + `---
apiVersion: v1
kind: Service
metadata: {name: ext, namespace: vendor}
spec:
  ports: [{name: grpc, port: 9000, targetPort: ` + port + `}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: ext-1, namespace: vendor, labels: {kubernetes.io/service-name: ext}}
addressType: IPv4
ports: [{name: grpc, port: ` + port + `}]
endpoints: [{addresses: ["` + host + `"]}]
---
apiVersion: projectcontour.io/v1alpha1
kind: ExtensionService
metadata: {name: ext, namespace: vendor}
spec:
  protocol: h2c
  services: [{name: ext, port: 9000}]
`
	if err := os.WriteFile(resources, []byte(in), 0o600); err != nil {
		t.Fatal(err)
	}
	c := "extensions:\n- {name: tagger, extensionService: vendor/ext, hooks: [PostTranslateInsert, PostVirtualHostModify], failurePolicy: Closed, timeout: 2s}\n"
	if err := os.WriteFile(cfg, []byte(c), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := run("translate", "--config", cfg, "--show-extension-diff", "-f", resources)
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, out, errOut)
	}
	for _, w := range []string{
		`changed: virtual host "a.example.com" of RouteConfiguration "ingress_http"`,
		`added: Cluster "ext-added"`, "0 failures",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}
