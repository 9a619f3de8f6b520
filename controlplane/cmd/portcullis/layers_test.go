package main

import (
	"go/build"
	"strings"
	"testing"
)

// The control plane's packages read as its pipeline: provider -> builder
// -> translator -> xdsserver, with statuswriter beside. A stage never
// reaches into one that is not its input: the providers only produce
// objects, serve runs the stages through pipeline. The builder has two
// front doors over one core: neither front door reaches into the other,
// and the core into neither. A name ending in "/..." stands for every
// package under it.
func TestPackageLayers(t *testing.T) {
	const module = "github.com/portcullis/portcullis/controlplane/internal/"
	forbidden := map[string][]string{
		"provider/kubernetes": {"pipeline", "status", "builder/...", "translator", "statuswriter"},
		"provider/file":       {"pipeline", "status", "builder/...", "translator", "statuswriter"},
		"serve":               {"builder/...", "translator"},
		"translator":          {"builder/...", "objects", "status", "pipeline"},
		"builder":             {"translator", "pipeline", "serve"},
		"builder/core":        {"builder", "builder/httpproxy", "builder/gatewayapi", "translator", "pipeline", "serve"},
		"builder/httpproxy":   {"builder", "builder/gatewayapi", "translator", "pipeline", "serve"},
		"builder/gatewayapi":  {"builder", "builder/httpproxy", "translator", "pipeline", "serve"},
		"statuswriter":        {"builder", "translator", "pipeline", "serve"},
		// The hooks see Envoy resources and their origins, never the rules.
		"extension": {"builder/...", "pipeline", "serve"},
		// The hook stage runs the hooks on a build; serve and translate
		// run it, never the other way round.
		"extstage": {"builder/...", "serve", "statuswriter"},
		"extdiff":  {"builder/...", "serve"},
	}
	for pkg, not := range forbidden {
		p, err := build.Import(module+pkg, ".", 0)
		if err != nil {
			t.Fatalf("%s: %v", pkg, err)
		}
		for _, imp := range p.Imports {
			for _, n := range not {
				if layerMatches(strings.TrimPrefix(imp, module), n) {
					t.Errorf("internal/%s imports internal/%s", pkg, n)
				}
			}
		}
	}
}

// layerMatches reports whether the package pkg is the one named, or one
// under it for a name ending in "/...".
func layerMatches(pkg, name string) bool {
	if base, ok := strings.CutSuffix(name, "/..."); ok {
		return pkg == base || strings.HasPrefix(pkg, base+"/")
	}
	return pkg == name
}
