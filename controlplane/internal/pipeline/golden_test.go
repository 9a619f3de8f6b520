package pipeline_test

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/pipeline"
	"github.com/portcullis/portcullis/controlplane/internal/pipeline/goldencase"
	"github.com/portcullis/portcullis/controlplane/internal/textdiff"
)

var update = flag.Bool("update", false, "rewrite the golden ir.yaml and out.yaml files")

// goldenNow is the transition time written in golden statuses.
var goldenNow = metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))

// TestGolden runs every testdata/<case>/in.yaml (with the shared objects of
// testdata/common) through the pipeline and compares the builder's model
// with testdata/<case>/ir.yaml, then the document with
// testdata/<case>/out.yaml: a change of the rules shows in the model
// before it shows in Envoy's configuration. Run with -update to accept new
// output, then review the diff.
func TestGolden(t *testing.T) {
	dirs, err := goldencase.Dirs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			model, doc := runCase(t, dir)
			for _, g := range []struct {
				file string
				got  []byte
			}{{"ir.yaml", model}, {"out.yaml", doc}} {
				checkGolden(t, filepath.Join(dir, g.file), g.got)
			}
		})
	}
}

// checkGolden compares got with the golden file, or rewrites it with
// -update.
func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("%v (run go test ./internal/pipeline -update to create it)", err)
		return
	}
	if d := textdiff.Unified(path, path+" (got)", string(want), string(got)); d != "" {
		t.Errorf("%s differs from the pipeline's output; run `go test ./internal/pipeline -run TestGolden -update` and review the diff.\n%s", path, d)
	}
}

// runCase renders one case: the builder's model and the document. The
// golden of an input that does not load is the error, as `portcullis
// translate` reports it, in both.
func runCase(t *testing.T, dir string) (model, doc []byte) {
	t.Helper()
	set, err := loadCase(dir)
	if err != nil {
		e := []byte(goldencase.LoadErrorPrefix + err.Error() + "\n")
		return e, e
	}
	res := pipeline.Run(set, pipelineOptions(t, dir))
	if model, err = encodeModel(res.Build.Model); err != nil {
		t.Fatal(err)
	}
	d, err := pipeline.NewDocument(set, res, goldenNow)
	if err != nil {
		t.Fatal(err)
	}
	if doc, err = d.Encode("yaml"); err != nil {
		t.Fatal(err)
	}
	return model, doc
}

// runPipeline runs one case (testdata/common, the case's in.yaml,
// options.yaml and config.yaml) through the pipeline. Callers run only the
// cases whose input loads (goldencase.Runnable; TestGolden checks the
// others' errors), so a load error here fails the test.
func runPipeline(t *testing.T, dir string) (*objects.Set, *pipeline.Result) {
	t.Helper()
	opts := pipelineOptions(t, dir)
	set, err := loadCase(dir)
	if err != nil {
		t.Fatalf("the input of %s does not load: %v", dir, err)
	}
	return set, pipeline.Run(set, opts)
}

// loadCase reads one case's objects with testdata/common.
func loadCase(dir string) (*objects.Set, error) { return goldencase.Load(dir) }

// pipelineOptions reads a case's options.yaml and config.yaml.
func pipelineOptions(t *testing.T, dir string) pipeline.Options {
	t.Helper()
	opts, err := goldencase.Options(dir)
	if err != nil {
		t.Fatal(err)
	}
	return opts
}
