// Package apis_test holds the tests of the apis module as a whole: generated
// files are current, the design samples (docs/design/) decode into the
// types, and the CRDs are accepted by the API server's own validation and
// validate the samples.
package apis_test

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// repoRoot walks up from the working directory to the folder holding go.work.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.work not found in any parent of the working directory")
		}
		dir = parent
	}
}

var docSeparator = regexp.MustCompile(`(?m)^---\s*$`)

// readDocs returns the non-empty YAML documents of testdata/spec/<name>.
func readDocs(t *testing.T, name string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "spec", name))
	if err != nil {
		t.Fatal(err)
	}
	var docs [][]byte
	for _, d := range docSeparator.Split(string(b), -1) {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(d), &m); err == nil && len(m) == 0 {
			continue // only comments
		}
		docs = append(docs, bytes.TrimSpace([]byte(d)))
	}
	return docs
}

// kindOf returns the apiVersion and kind of a YAML document.
func kindOf(t *testing.T, doc []byte) metav1.TypeMeta {
	t.Helper()
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		t.Fatal(err)
	}
	return tm
}

// decodeStrict decodes a YAML document the way the API server does (case
// sensitive, duplicate fields and unknown fields reported, all of them).
func decodeStrict(t *testing.T, doc []byte, obj any) []error {
	t.Helper()
	j, err := yaml.YAMLToJSON(doc)
	if err != nil {
		t.Fatal(err)
	}
	strictErrs, err := sigsjson.UnmarshalStrict(j, obj)
	if err != nil {
		t.Fatal(err)
	}
	return strictErrs
}
