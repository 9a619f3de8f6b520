package gatewayapi

import (
	"cmp"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// gwIRRoute is one IR route of a Gateway API route (one match of one
// rule), with what orders it among the routes of its virtual host.
type gwIRRoute struct {
	route       *ir.Route
	obj         metav1.Object
	kind        gwapiv1.Kind
	rule, match int
}

// sortByPrecedence orders the routes of one virtual host the way the
// Gateway API says a request picks its route (Envoy takes the first that
// matches): an exact path, then a regular expression (longest first:
// implementation-specific in the API; before prefixes so that a "/"
// prefix does not hide it), then the longest prefix; then a method match;
// then the most header matches; then the most query parameter matches;
// then the oldest route, then by namespace and name; then the rule's
// order and the match's.
func sortByPrecedence(routes []gwIRRoute) {
	slices.SortStableFunc(routes, comparePrecedence)
}

func comparePrecedence(a, b gwIRRoute) int {
	ra, rb := a.route, b.route
	return cmp.Or(
		cmp.Compare(core.PathRank(ra.PathKind), core.PathRank(rb.PathKind)),
		cmp.Compare(len(rb.Path), len(ra.Path)),
		cmp.Compare(methodRank(ra), methodRank(rb)),
		cmp.Compare(len(rb.Headers)-1+methodRank(rb), len(ra.Headers)-1+methodRank(ra)),
		cmp.Compare(len(rb.QueryParams), len(ra.QueryParams)),
		core.OlderClaim(a.obj, b.obj),
		cmp.Compare(a.kind, b.kind),
		cmp.Compare(a.rule, b.rule),
		cmp.Compare(a.match, b.match),
	)
}

// methodRank is 0 for a route with a method match, 1 without: with one,
// it comes first.
func methodRank(r *ir.Route) int {
	if slices.ContainsFunc(r.Headers, func(h ir.HeaderMatch) bool { return h.Name == methodHeader }) {
		return 0
	}
	return 1
}
