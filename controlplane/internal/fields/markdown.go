package fields

import (
	"bytes"
	"fmt"
	"strings"
)

// DocsPage is the docs page rendered from the table, relative to the
// repository root.
const DocsPage = "docs/httpproxy-fields.md"

// Markdown renders the table as the docs page: for each kind, every field
// path and whether portcullis implements it.
func Markdown() []byte {
	var b bytes.Buffer
	b.WriteString(`# Fields of the projectcontour.io API

<!-- Generated from controlplane/internal/fields/table.go: do not edit. In
controlplane/, ` + "`go test ./internal/fields -update`" + ` rewrites it. -->

Portcullis reads the ` + "`projectcontour.io`" + ` API of Contour: its CRDs carry every
field of the upstream API, so the API server keeps what you write. Not every
field is implemented. A field that is not (**refused** below) is never
ignored: an HTTPProxy, ExtensionService or TLSCertificateDelegation that sets
one is not valid (` + "`Valid`" + ` is ` + "`False`" + ` with a ` + "`SpecError`" + ` of reason
` + "`UnsupportedField`" + ` naming the field, e.g.
` + "`spec.routes[2].retryPolicy`" + `) and is not served, like any
invalid object: a root is not served at all, an included HTTPProxy
contributes no routes (see [status.md](status.md)). An IP allow list or a
JWT policy ignored would serve everyone what it was meant to restrict.

A field whose being ignored cannot serve more openly or differently than
written, and that Contour accepts and ignores, is **accepted, no effect**:
the object is served as if it were unset, with a warning (` + "`IgnoredField`" + `)
that says so (see [design/decisions.md](design/decisions.md), harmless
fields).

A few implemented fields are Portcullis's own, **not in Contour's released
API** (v1.33): with Contour's CRDs the API server refuses them under strict
field validation (` + "`kubectl apply`" + `'s default) and drops them otherwise, so
objects that must also apply with Contour leave them out (see
[migrating-from-contour.md](migrating-from-contour.md#fields-contours-released-api-does-not-have)).

A refused field is refused with everything under it. A field that no API
has (a misspelling) is an error too (` + "`UnknownField`" + `).
`)
	for _, k := range Kinds {
		fmt.Fprintf(&b, "\n## %s\n\n| field | |\n|---|---|\n", k.Kind)
		for _, r := range Rows(k.Kind) {
			fmt.Fprintf(&b, "| `%s` | %s |\n", r.Pattern, cell(r))
		}
	}
	return b.Bytes()
}

func cell(r Row) string {
	switch {
	case !r.Known:
		return "**not classified**"
	case r.Support.noEffect:
		return "accepted, no effect (a warning in the status): " + strings.ReplaceAll(r.Support.why, "|", `\|`)
	case r.Support.notInContour != "":
		return "implemented; **not in Contour's released API**: " + strings.ReplaceAll(r.Support.notInContour, "|", `\|`)
	case r.Support.implemented:
		return "implemented"
	}
	return "**refused**: " + strings.ReplaceAll(r.Support.why, "|", `\|`)
}
