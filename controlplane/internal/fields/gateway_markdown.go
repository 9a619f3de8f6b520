package fields

import (
	"bytes"
	"fmt"
	"strings"
)

// GatewayDocsPage is the docs page rendered from the Gateway API table,
// relative to the repository root.
const GatewayDocsPage = "docs/gateway-api-fields.md"

// GatewayMarkdown renders the Gateway API table as the docs page: for each
// kind, every field path and what portcullis does with it.
func GatewayMarkdown() []byte {
	var b bytes.Buffer
	b.WriteString(`# Fields of the Gateway API

<!-- Generated from controlplane/internal/fields/gateway_table.go: do not
edit. In controlplane/, ` + "`go test ./internal/fields -update`" + ` rewrites it. -->

Every field of the specs of the Gateway API kinds Portcullis serves
(` + "`gateway.networking.k8s.io`" + ` at the module version in
` + "`controlplane/go.mod`" + `, and Portcullis's own ` + "`gateway.portcullis.dev`" + `
policies), as the builder treats it (see [gateway-api.md](gateway-api.md)
for what each does, and its "What is refused, and why"):

- **implemented**: translated or used; a note says which values of it are
  taken, and what happens to the others;
- **refused**: setting it stops what it belongs to, with the condition,
  reason and message shown: a Gateway or a listener is not accepted, a
  rule or a backend answers 500, a policy is not accepted. A refused
  field is refused with everything under it. A route's rule refused is
  said in its PartiallyInvalid condition (the route stays accepted);
  when no rule of the route is left valid, in Accepted (False);
- **ignored**: not read; the object is served as if it were unset, without
  a warning in its status. An ignored field is ignored with everything
  under it.

A field that the API does not have (a misspelling) makes the object not
served, as for HTTPProxy ([httpproxy-fields.md](httpproxy-fields.md)).
`)
	for _, k := range GatewayKinds {
		fmt.Fprintf(&b, "\n## %s\n\n| field | |\n|---|---|\n", k.Kind)
		for _, r := range GatewayRows(k.Kind) {
			fmt.Fprintf(&b, "| `%s` | %s |\n", r.Pattern, gatewayCell(r))
		}
	}
	return b.Bytes()
}

func gatewayCell(r Row) string {
	why := strings.ReplaceAll(r.Support.why, "|", `\|`)
	switch {
	case !r.Known:
		return "**not classified**"
	case r.Support.implemented && why == "":
		return "implemented"
	case r.Support.implemented:
		return "implemented: " + why
	case r.Support.ignored:
		return "ignored: " + why
	}
	return "**refused**: " + why
}
