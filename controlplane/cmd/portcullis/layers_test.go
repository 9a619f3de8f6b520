package main

import (
	"go/build"
	"strings"
	"testing"
)

// The control plane's packages read as its pipeline: provider -> builder
// -> translator -> xdsserver, with statuswriter beside. A stage never
// reaches into one that is not its input: the providers only produce
// objects, serve runs the stages through pipeline.
func TestPackageLayers(t *testing.T) {
	const module = "github.com/portcullis/portcullis/controlplane/internal/"
	forbidden := map[string][]string{
		"provider/kubernetes": {"pipeline", "status", "builder", "translator", "statuswriter"},
		"provider/file":       {"pipeline", "status", "builder", "translator", "statuswriter"},
		"serve":               {"builder", "translator"},
		"translator":          {"builder", "objects", "status", "pipeline"},
		"builder":             {"translator", "pipeline", "serve"},
		"statuswriter":        {"builder", "translator", "pipeline", "serve"},
		// The hooks see Envoy resources and their origins, never the rules.
		"extension": {"builder", "pipeline", "serve"},
		// The hook stage runs the hooks on a build; serve and translate
		// run it, never the other way round.
		"extstage": {"builder", "serve", "statuswriter"},
		"extdiff":  {"builder", "serve"},
	}
	for pkg, not := range forbidden {
		p, err := build.Import(module+pkg, ".", 0)
		if err != nil {
			t.Fatalf("%s: %v", pkg, err)
		}
		for _, imp := range p.Imports {
			for _, n := range not {
				if strings.TrimPrefix(imp, module) == n {
					t.Errorf("internal/%s imports internal/%s", pkg, n)
				}
			}
		}
	}
}
