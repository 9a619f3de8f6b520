package translator

import (
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// RouterFilterName is the router filter's name in Envoy.
const RouterFilterName = "envoy.filters.http.router"

// routerFilter forwards requests along the routes: in every HCM, without
// per-route configuration (the route's action is its configuration).
type routerFilter struct{}

func (routerFilter) name() string { return RouterFilterName }

func (routerFilter) needed(hcmSettings) bool { return true }

func (routerFilter) httpFilters(hcmSettings) []*hcmv3.HttpFilter {
	return oneFilter(RouterFilterName, &routerv3.Router{})
}

func (routerFilter) perRoute(*ir.Route) (string, proto.Message) { return "", nil }
