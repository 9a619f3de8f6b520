package pipeline_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/portcullis/portcullis/controlplane/internal/config"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/pipeline"
	"github.com/portcullis/portcullis/controlplane/internal/provider/file"
)

// FuzzPipeline feeds arbitrary YAML (seeded with every golden input) through
// decoding, the builder and the translator: whatever the input, no panic,
// and the result renders. Run longer with
// go test ./internal/pipeline -run '^$' -fuzz FuzzPipeline -fuzztime 1m
func FuzzPipeline(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*/in.yaml")
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	common, _, err := file.Load([]string{"testdata/common"})
	if err != nil {
		f.Fatal(err)
	}
	// Every input also runs under global authorization and processing.
	cfg, err := config.Load("testdata/global-ext-proc-rules/config.yaml")
	if err != nil {
		f.Fatal(err)
	}
	withGlobals := pipeline.DefaultOptions()
	withGlobals.Builder.GlobalExtAuth, withGlobals.Builder.GlobalExtProc = cfg.GlobalExtAuth, cfg.GlobalExtProc
	f.Fuzz(func(t *testing.T, data []byte) {
		set := &objects.Set{
			Secrets: common.Secrets, Services: common.Services, EndpointSlices: common.EndpointSlices,
		}
		if _, err := set.Decode(bytes.NewReader(data), "fuzz"); err != nil {
			return
		}
		set.Sort()
		for _, opts := range []pipeline.Options{pipeline.DefaultOptions(), withGlobals} {
			res := pipeline.Run(set, opts)
			if _, err := pipeline.NewDocument(set, res, goldenNow); err != nil {
				t.Fatalf("rendering: %v", err)
			}
		}
	})
}
