package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/portcullis/portcullis/controlplane/internal/pipeline"
)

// TestTranslateConfig runs `portcullis translate --config` as a user would.
func TestTranslateConfig(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("globalExtAuth:\n  extensionService: portcullis-auth/testserver\n  responseTimout: 1s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const example = "../../../examples/global-external-authorization/"
	for _, tc := range []struct {
		name    string
		args    []string
		want    []string // in the output
		wantErr string
	}{
		{"example configuration", []string{"--config", example + "portcullis.yaml", "-f", example + "resources"},
			[]string{"envoy.filters.http.ext_authz", "envoy.filters.http.ext_proc", "extension/portcullis-auth/testserver", "extension/portcullis-extproc/headers"}, ""},
		{"no configuration, no global filters", []string{"-f", example + "resources"}, nil, ""},
		{"invalid configuration names file and field", []string{"--config", bad, "-f", example + "resources"}, nil,
			"--config: " + bad + ": globalExtAuth.responseTimout: unknown field"},
		{"missing configuration file", []string{"--config", filepath.Join(t.TempDir(), "none.yaml"), "-f", example + "resources"}, nil, "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, err := run(append([]string{"translate", "-o", "json"}, tc.args...)...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("%v\n%s", err, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q", w)
				}
			}
			if tc.want == nil && strings.Contains(out, "envoy.filters.http.ext_") {
				t.Errorf("global filters installed without a configuration file")
			}
		})
	}
}

// An invalid extensions section stops translate --config and serve at
// start, with every problem naming its field.
func TestExtensionConfigErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "ext.yaml")
	if err := os.WriteFile(bad, []byte("extensions:\n- hooks: [PostTranslateModify, PreRouteModify]\n  failurePolicy: closed\n- {name: b, address: b:1, hooks: [PostTranslateModify], resources: [{group: g, version: v1, kind: K}]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	want := []string{"--config: " + bad + ": ", "extensions[0].name: required", "extensions[0].address: required", `extensions[0].hooks: unknown hook "PreRouteModify"`,
		`extensions[0].failurePolicy: "closed" is neither Closed nor Open`, "extensions[1].hooks: resources and policyResources are sent only to PostRouteModify"}
	const example = "../../../examples/quickstart/"
	for _, args := range [][]string{
		{"translate", "--config", bad, "-f", example},
		{"serve", "--config", bad, "-f", example, "--xds-address", "127.0.0.1:0", "--admin-address", ""},
	} {
		_, _, err := run(args...)
		for _, w := range want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error = %v, want it to contain %q", args[0], err, w)
			}
		}
	}
	// A valid one: translate checks it and does not call the extension.
	good := filepath.Join(t.TempDir(), "ext.yaml")
	if err := os.WriteFile(good, []byte("extensions: [{name: a, address: 127.0.0.1:1, hooks: [PostVirtualHostModify]}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, errOut, err := run("translate", "--config", good, "-f", example); err != nil {
		t.Errorf("translate with a valid extension section: %v\n%s", err, errOut)
	}
}

// TestConfigReloadKeepsTheControllerName: the status writer keeps the
// controller name it started with, so a reload that changes it must not
// hand the builder another one (route parents would be written twice).
func TestConfigReloadKeepsTheControllerName(t *testing.T) {
	path := filepath.Join(t.TempDir(), "portcullis.yaml")
	if err := os.WriteFile(path, []byte("gateway: {controllerName: example.com/first}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	w := configWatcher{path: path, interval: 10 * time.Millisecond, log: slog.New(slog.DiscardHandler), controller: "example.com/first"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan pipeline.Options, 1)
	go w.Run(ctx, func(o pipeline.Options) {
		select {
		case got <- o:
		default:
		}
	}, nil)
	time.Sleep(50 * time.Millisecond)
	// Replaced at once, as Kubernetes updates a mounted ConfigMap: a
	// write in place can be read half done.
	next := path + ".next"
	if err := os.WriteFile(next, []byte("gateway: {controllerName: example.com/second}\nlimits: {maxIncludeDepth: 3}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(next, path); err != nil {
		t.Fatal(err)
	}
	select {
	case o := <-got:
		if o.Builder.GatewayControllerName != "example.com/first" {
			t.Errorf("controller name after the reload: %q, want the startup one", o.Builder.GatewayControllerName)
		}
		if o.Builder.Limits.MaxIncludeDepth != 3 {
			t.Errorf("the rest of the reload was not applied: limits %+v", o.Builder.Limits)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no reload")
	}
}

// translate --config reads the objects of the kinds the configuration's
// extensions registered instead of skipping them; without the
// configuration they are skipped.
func TestTranslateReadsExtensionKinds(t *testing.T) {
	dir := t.TempDir()
	cfg, in := filepath.Join(dir, "config.yaml"), filepath.Join(dir, "in.yaml")
	if err := os.WriteFile(cfg, []byte("extensions:\n- name: basicauth\n  address: 127.0.0.1:18100\n  hooks: [PostRouteModify]\n"+
		"  resources:\n  - {group: examples.portcullis.dev, version: v1alpha1, kind: BasicAuthFilter}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(in, []byte("apiVersion: examples.portcullis.dev/v1alpha1\nkind: BasicAuthFilter\nmetadata: {name: auth}\nspec: {realm: x}\n---\n"+
		"apiVersion: examples.portcullis.dev/v1alpha1\nkind: Unregistered\nmetadata: {name: u}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, err := run("translate", "--config", cfg, "-f", in)
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	if strings.Contains(errOut, "BasicAuthFilter") || !strings.Contains(errOut, "Unregistered") {
		t.Errorf("with the configuration, skipped:\n%s\nwant the Unregistered object only", errOut)
	}
	if _, errOut, err = run("translate", "-f", in); err != nil || !strings.Contains(errOut, "BasicAuthFilter): kind not read by portcullis") {
		t.Errorf("without the configuration (%v), skipped:\n%s\nwant the BasicAuthFilter too", err, errOut)
	}
}
