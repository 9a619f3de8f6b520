package pipeline_test

import (
	"encoding/json"
	"flag"
	"math"
	"os"
	"testing"

	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/pipeline"
)

var updateBudget = flag.Bool("update-budget", false, "rewrite testdata/alloc-budget.json with the allocations measured now")

// allocBudget is the committed allocation budget of the pipeline
// (testdata/alloc-budget.json). Allocations are stable across machines
// where times are not: a change that grows them more than budgetSlack over
// the budget fails TestAllocationBudget; one that earns fewer updates the
// budget in the same commit (-update-budget), deliberately.
type allocBudget struct {
	// FullBuildPerObject: pipeline.Run of the 1,000-root scale set
	// (scaleSet), per input object.
	FullBuildPerObject float64 `json:"fullBuildPerObject"`
	// Change: one root changed, pipeline.RunCached with the caches of the
	// previous run (as `portcullis serve` rebuilds).
	Change float64 `json:"change"`
}

const (
	budgetFile  = "testdata/alloc-budget.json"
	budgetSlack = 1.10
	budgetRoots = 1000
)

// TestAllocationBudget fails when the pipeline allocates more than 10%
// over its committed budget, for a full build of budgetRoots roots (per
// object) and for a one-root change.
func TestAllocationBudget(t *testing.T) {
	got := measureAllocations(t)
	t.Logf("full build: %.1f allocations per object; one change: %.0f allocations", got.FullBuildPerObject, got.Change)
	if *updateBudget {
		b, err := json.MarshalIndent(got, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(budgetFile, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	b, err := os.ReadFile(budgetFile)
	if err != nil {
		t.Fatalf("%v: run go test ./internal/pipeline -run TestAllocationBudget -update-budget", err)
	}
	var budget allocBudget
	if err := json.Unmarshal(b, &budget); err != nil {
		t.Fatalf("%s: %v", budgetFile, err)
	}
	for _, c := range []struct {
		name        string
		got, budget float64
	}{
		{"full build, per object", got.FullBuildPerObject, budget.FullBuildPerObject},
		{"one change", got.Change, budget.Change},
	} {
		if c.got > c.budget*budgetSlack {
			t.Errorf("%s: %.1f allocations, %.0f%% over the budget of %.1f (%s): find what grew, or earn it and update the budget (-update-budget)",
				c.name, c.got, 100*(c.got/c.budget-1), c.budget, budgetFile)
		}
	}
}

// measureAllocations measures the budget's figures now.
func measureAllocations(t *testing.T) allocBudget {
	set := scaleSet(t, budgetRoots)
	opts := pipeline.DefaultOptions()
	full := testing.AllocsPerRun(2, func() { pipeline.Run(set, opts) })

	// The changed sets are made before: only the rebuilds are counted.
	const changes = 5
	change := rootChanger(set)
	sets := make([]*objects.Set, changes+1)
	cur := set
	for i := range sets {
		cur = change(cur, i+1)
		sets[i] = cur
	}
	cache := pipeline.NewCache()
	pipeline.RunCached(set, opts, cache)
	i := 0
	perChange := testing.AllocsPerRun(changes, func() {
		pipeline.RunCached(sets[i], opts, cache)
		i++
	})
	return allocBudget{FullBuildPerObject: math.Round(10*full/float64(objectCount(set))) / 10, Change: perChange}
}

// objectCount is how many input objects set has.
func objectCount(s *objects.Set) int {
	return len(s.HTTPProxies) + len(s.Services) + len(s.EndpointSlices) + len(s.Secrets) + len(s.ExtensionServices)
}
