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
	b.WriteString(serviceAnnotations)
	return b.Bytes()
}

// serviceAnnotations is the section on the annotations of Services that
// Portcullis reads (internal/builder/core/serviceannotations.go; its test
// checks that each is here).
const serviceAnnotations = `
## Service annotations

Contour's annotations of a Kubernetes Service apply to the clusters of its
ports, for HTTPProxy services (routes and ` + "`tcpproxy`" + `) and Gateway API
backends alike, as in Contour. ExtensionServices do not read them (they have
` + "`spec.protocol`" + ` and ` + "`spec.circuitBreakerPolicy`" + `).

| annotation | |
|---|---|
| ` + "`projectcontour.io/upstream-protocol.h2`" + ` | implemented: the listed ports (comma-separated names or numbers of the Service's ports) are spoken to in HTTP/2 over TLS |
| ` + "`projectcontour.io/upstream-protocol.h2c`" + ` | implemented: HTTP/2 cleartext (prior knowledge) |
| ` + "`projectcontour.io/upstream-protocol.tls`" + ` | implemented: HTTP/1.1 over TLS |
| ` + "`projectcontour.io/max-connections`" + ` | implemented: the cluster's circuit breaker threshold; ` + "`0`" + ` is Envoy's default |
| ` + "`projectcontour.io/max-pending-requests`" + ` | implemented (likewise) |
| ` + "`projectcontour.io/max-requests`" + ` | implemented (likewise) |
| ` + "`projectcontour.io/max-retries`" + ` | implemented (likewise) |
| ` + "`projectcontour.io/per-host-max-connections`" + ` | implemented: the limit of connections to each endpoint |
| any other ` + "`projectcontour.io/`" + ` annotation | **refused** (` + "`ServiceAnnotationNotSupported`" + `), including Contour's Ingress annotations (` + "`projectcontour.io/response-timeout`" + ` …) set on a Service |

Precedence, as in Contour: a port's ` + "`appProtocol`" + ` (` + "`kubernetes.io/h2c`" + ` is
h2c, ` + "`https`" + ` is tls) wins over the upstream-protocol annotations, and an
HTTPProxy service's ` + "`protocol`" + ` wins over both; ` + "`validation`" + ` needs the
resulting protocol to be ` + "`tls`" + ` or ` + "`h2`" + `, so Contour's upstream TLS example
(the annotation on the Service, ` + "`validation`" + ` on the HTTPProxy) works as
written. A GRPCRoute's backend that none of them names is spoken to in h2c.

Where Contour ignores what it cannot read, Portcullis refuses the Service
(` + "`ServiceAnnotationInvalid`" + `, naming the annotation and the value): a limit
that is not a number from 0 to 4294967295, a listed port the Service does not
have, a port listed under two protocols, or an annotation against the port's
` + "`appProtocol`" + `. A refused Service is never served otherwise than written: the
HTTPProxy route that uses it is invalid (a ` + "`ServiceError`" + ` condition; the
root is not served), a Gateway API backend is not resolved
(` + "`ResolvedRefs`" + ` is ` + "`False`" + ` with the same reasons; its share of the rule answers
500).
`

func cell(r Row) string {
	switch {
	case !r.Known:
		return "**not classified**"
	case r.Support.noEffect:
		return "accepted, no effect (a warning in the status): " + strings.ReplaceAll(r.Support.why, "|", `\|`)
	case r.Support.notInContour != "":
		return "implemented; **not in Contour's released API**: " + strings.ReplaceAll(r.Support.notInContour, "|", `\|`)
	case r.Support.implemented && r.Support.why == "":
		return "implemented"
	case r.Support.implemented:
		return "implemented: " + strings.ReplaceAll(r.Support.why, "|", `\|`)
	}
	return "**refused**: " + strings.ReplaceAll(r.Support.why, "|", `\|`)
}
