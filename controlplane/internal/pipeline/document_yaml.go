package pipeline

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/portcullis/portcullis/controlplane/internal/parallel"
)

// WriteTo writes the document to w as indented JSON ("json") or as YAML
// ("yaml"), both one element at a time (document_json.go for JSON). YAML
// is written one element at a time, each converted on its
// own (in parallel): converting the whole document at once held it three
// times over (JSON, a generic tree, YAML) and took five times as long as
// JSON at 5,000 routes. The YAML is the same as the whole document's
// (TestStreamedYAMLIsTheDocumentsYAML).
func (d *Document) WriteTo(w io.Writer, format string) error {
	switch format {
	case "json":
		bw := bufio.NewWriterSize(w, 1<<16)
		if err := d.writeJSON(bw); err != nil {
			return err
		}
		return bw.Flush()
	case "yaml":
		bw := bufio.NewWriterSize(w, 1<<16)
		if err := d.writeYAML(bw); err != nil {
			return err
		}
		return bw.Flush()
	}
	return fmt.Errorf("unknown output format %q: use json or yaml", format)
}

// writeYAML writes the document's keys in YAML's order (sorted).
func (d *Document) writeYAML(w *bufio.Writer) error {
	statuses := make([]any, len(d.Status))
	for i := range d.Status {
		statuses[i] = d.Status[i]
	}
	if err := yamlList(w, []string{"status"}, statuses, d.Status == nil); err != nil {
		return err
	}
	if _, err := w.WriteString("xds:\n"); err != nil {
		return err
	}
	for _, l := range []struct {
		key   string
		items []json.RawMessage
	}{
		{"clusters", d.XDS.Clusters}, {"endpoints", d.XDS.Endpoints}, {"listeners", d.XDS.Listeners},
		{"routes", d.XDS.Routes}, {"secrets", d.XDS.Secrets},
	} {
		items := make([]any, len(l.items))
		for i, m := range l.items {
			items[i] = m
		}
		if err := yamlList(w, []string{"xds", l.key}, items, l.items == nil); err != nil {
			return err
		}
	}
	return nil
}

// yamlList writes the list at path (its last key; the others are written
// already): "null" when nil, "[]" when empty, else each item as a sequence
// entry. Each item is converted inside its keys, then those lines are
// dropped: YAML folds long strings at a width that counts the
// indentation, so an item converted on its own and indented after would
// break its lines elsewhere.
func yamlList(w *bufio.Writer, path []string, items []any, isNil bool) error {
	indent := strings.Repeat("  ", len(path)-1)
	key := path[len(path)-1]
	switch {
	case isNil:
		_, err := fmt.Fprintf(w, "%s%s: null\n", indent, key)
		return err
	case len(items) == 0:
		_, err := fmt.Fprintf(w, "%s%s: []\n", indent, key)
		return err
	}
	fmt.Fprintf(w, "%s%s:\n", indent, key)
	out := make([][]byte, len(items))
	errs := make([]error, len(items))
	parallel.For(len(items), func(i int) {
		var v any = []any{items[i]}
		for j := len(path) - 1; j >= 0; j-- {
			v = map[string]any{path[j]: v}
		}
		y, err := yaml.Marshal(v)
		for range path {
			_, y, _ = bytes.Cut(y, []byte("\n"))
		}
		out[i], errs[i] = y, err
	})
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, y := range out {
		if _, err := w.Write(y); err != nil {
			return err
		}
	}
	return nil
}
