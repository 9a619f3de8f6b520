package pipeline

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/portcullis/portcullis/controlplane/internal/statuswriter"
)

// writeJSON writes the document as json.MarshalIndent(d, "", "  ") and a
// newline, one element at a time: marshalling the whole document held it
// three times over (the elements, the compact document, the indented one)
// and scanned every element twice; at 10,000 HTTPRoutes that was most of
// translate's peak memory. TestStreamedJSONIsTheDocumentsJSON keeps the
// two equal byte for byte.
//
// A bufio.Writer's error is sticky: the last write and Flush return it.
func (d *Document) writeJSON(w *bufio.Writer) error {
	_, _ = w.WriteString("{\n  \"status\": ")
	if err := jsonList(w, "  ", d.Status, func(buf *bytes.Buffer, u *statuswriter.Update, prefix string) error {
		b, err := json.MarshalIndent(u, prefix, "  ")
		buf.Write(b)
		return err
	}); err != nil {
		return err
	}
	_, _ = w.WriteString(",\n  \"xds\": {")
	for i, l := range []struct {
		key   string
		items []json.RawMessage
	}{
		{"listeners", d.XDS.Listeners}, {"routes", d.XDS.Routes}, {"clusters", d.XDS.Clusters},
		{"endpoints", d.XDS.Endpoints}, {"secrets", d.XDS.Secrets},
	} {
		if i > 0 {
			_ = w.WriteByte(',')
		}
		_, _ = w.WriteString("\n    " + strconv.Quote(l.key) + ": ")
		if err := jsonList(w, "    ", l.items, indentRaw); err != nil {
			return err
		}
	}
	_, err := w.WriteString("\n  }\n}\n")
	return err
}

// jsonList writes items as MarshalIndent writes a list at prefix's depth:
// null when nil, [] when empty, else each element on its own line.
func jsonList[T any](w *bufio.Writer, prefix string, items []T, write func(*bytes.Buffer, *T, string) error) error {
	switch {
	case items == nil:
		_, err := w.WriteString("null")
		return err
	case len(items) == 0:
		_, err := w.WriteString("[]")
		return err
	}
	_ = w.WriteByte('[')
	var buf bytes.Buffer
	inner := prefix + "  "
	for i := range items {
		if i > 0 {
			_ = w.WriteByte(',')
		}
		_, _ = w.WriteString("\n" + inner)
		buf.Reset()
		if err := write(&buf, &items[i], inner); err != nil {
			return err
		}
		if _, err := w.Write(buf.Bytes()); err != nil {
			return err
		}
	}
	_, err := w.WriteString("\n" + prefix + "]")
	return err
}

// indentRaw indents one Envoy resource as Marshal writes a RawMessage:
// with <, > and & escaped in its strings.
func indentRaw(buf *bytes.Buffer, raw *json.RawMessage, prefix string) error {
	src := bytes.TrimRight(*raw, " \t\r\n") // Indent keeps trailing space
	if len(src) == 0 {
		buf.WriteString("null")
		return nil
	}
	if bytes.ContainsAny(src, "<>&\u2028\u2029") {
		var escaped bytes.Buffer
		json.HTMLEscape(&escaped, src)
		src = escaped.Bytes()
	}
	return json.Indent(buf, src, prefix, "  ")
}
