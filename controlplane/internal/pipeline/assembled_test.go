package pipeline_test

import (
	"bytes"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/portcullis/portcullis/controlplane/internal/pipeline"
	"github.com/portcullis/portcullis/controlplane/internal/pipeline/goldencase"
)

// Every encoding the translator assembles (Resources.Encoded: the shared
// route configurations) is proto's deterministic encoding of its message,
// in every golden case and in both scale shapes, built afresh and with
// the caches of a previous build (whose routes' encodings it reuses).
func TestAssembledEncodings(t *testing.T) {
	check := func(t *testing.T, res *pipeline.Result) int {
		t.Helper()
		for m, got := range res.Resources.Encoded {
			want, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%T: assembled encoding of %d bytes differs from proto's of %d", m, len(got), len(want))
			}
		}
		return len(res.Resources.Encoded)
	}
	dirs, err := goldencase.Runnable("testdata")
	if err != nil {
		t.Fatal(err)
	}
	assembled := 0
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			_, res := runPipeline(t, dir)
			assembled += check(t, res)
		})
	}
	if assembled == 0 {
		t.Error("no golden case has an assembled encoding")
	}
	for _, shape := range shapes {
		t.Run(shape.name, func(t *testing.T) {
			set, opts, cache := shape.set(t, 200), pipeline.DefaultOptions(), pipeline.NewCache()
			if check(t, pipeline.RunCached(set, opts, cache)) == 0 {
				t.Fatal("nothing assembled")
			}
			change := rootChanger(set)
			for i := 1; i <= 3; i++ {
				set = change(set, i)
				check(t, pipeline.RunCached(set, opts, cache))
			}
		})
	}
}
