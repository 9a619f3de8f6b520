package pipeline_test

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/portcullis/portcullis/controlplane/internal/pipeline"
	"github.com/portcullis/portcullis/controlplane/internal/pipeline/goldencase"
	"github.com/portcullis/portcullis/controlplane/internal/textdiff"
)

// TestStreamedYAMLIsTheDocumentsYAML: the YAML written one element at a
// time is, byte for byte, the whole document's JSON converted to YAML at
// once (what `translate -o yaml` printed before it streamed), for every
// golden case: long strings fold at the same columns, empty and missing
// lists read the same.
func TestStreamedYAMLIsTheDocumentsYAML(t *testing.T) {
	eachGoldenDocument(t, checkStreamedYAML)
	// Nothing at all: missing lists are null, empty ones [].
	checkStreamedYAML(t, &pipeline.Document{XDS: pipeline.XDS{Routes: []json.RawMessage{}}})
}

// checkStreamedYAML compares d's streamed YAML with its JSON converted at
// once.
func checkStreamedYAML(t *testing.T, d *pipeline.Document) {
	t.Helper()
	j, err := d.Encode("json")
	if err != nil {
		t.Fatal(err)
	}
	want, err := yaml.JSONToYAML(j)
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if err := d.WriteTo(&got, "yaml"); err != nil {
		t.Fatal(err)
	}
	if diff := textdiff.Unified("whole", "streamed", string(want), got.String()); diff != "" {
		t.Errorf("streamed YAML differs:\n%s", diff)
	}
}

// TestStreamedJSONIsTheDocumentsJSON: the JSON written one element at a
// time is, byte for byte, json.MarshalIndent of the whole document (what
// `translate -o json` printed before it streamed), for every golden case
// and for missing, empty and HTML-escaped elements.
func TestStreamedJSONIsTheDocumentsJSON(t *testing.T) {
	eachGoldenDocument(t, checkStreamedJSON)
	checkStreamedJSON(t, &pipeline.Document{XDS: pipeline.XDS{Routes: []json.RawMessage{}}})
	checkStreamedJSON(t, &pipeline.Document{XDS: pipeline.XDS{Clusters: []json.RawMessage{
		json.RawMessage(`{"name":"a<b>&c\u2028","n":[1, 2,{"x" : []}],"e":{}}`), nil, json.RawMessage(`  {"y":"\"q\""} `)}}})
}

func checkStreamedJSON(t *testing.T, d *pipeline.Document) {
	t.Helper()
	want, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if err := d.WriteTo(&got, "json"); err != nil {
		t.Fatal(err)
	}
	if diff := textdiff.Unified("whole", "streamed", string(want)+"\n", got.String()); diff != "" {
		t.Errorf("streamed JSON differs:\n%s", diff)
	}
}

// eachGoldenDocument calls check with the document of every golden case.
func eachGoldenDocument(t *testing.T, check func(*testing.T, *pipeline.Document)) {
	t.Helper()
	dirs, err := goldencase.Runnable("testdata")
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			set, res := runPipeline(t, dir)
			d, err := pipeline.NewDocument(set, res, goldenNow)
			if err != nil {
				t.Fatal(err)
			}
			check(t, d)
		})
	}
}
