package httpproxy

import (
	"fmt"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// When extensions are registered, every route is named after the
// HTTPProxy whose spec.routes holds it and its index there
// ("httpproxy/<ns>/<name>/route/<i>"), and its origin is that HTTPProxy:
// extensions find routes by them (PostRouteModify, the Envoy route's
// metadata). A route included through several includes keeps its one
// name. Without extensions, routes stay unnamed: Envoy's configuration is
// what it was.

// routeOrigin is the origin of p's routes, shared by them (the IR is
// never modified); nil without extensions.
func (b *rootBuilder) routeOrigin(p *contourv1.HTTPProxy) *ir.RouteOrigin {
	if ext := b.R.Opts().Extensions; !ext.Any && len(ext.Policies) == 0 {
		return nil
	}
	return &ir.RouteOrigin{Kind: core.KindHTTPProxy, Namespace: p.Namespace, Name: p.Name}
}

// routeName names route i of the HTTPProxy o.
func routeName(o *ir.RouteOrigin, i int) string {
	return fmt.Sprintf("httpproxy/%s/%s/route/%d", o.Namespace, o.Name, i)
}

// redirectName names the HTTPS redirect made of a route (irRedirect):
// the route's name, told apart; "" for an unnamed route.
func redirectName(route string) string {
	if route == "" {
		return ""
	}
	return route + "/https-redirect"
}

// hostRedirectName names the redirect of every path of a TLS host
// (InsecureRoutes), written in no route: after its root.
func hostRedirectName(root *ir.RouteOrigin) string {
	return fmt.Sprintf("httpproxy/%s/%s/https-redirect", root.Namespace, root.Name)
}
