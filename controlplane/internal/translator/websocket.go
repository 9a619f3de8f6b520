package translator

import (
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// upgrades are a route's upgrade_configs: WebSocket upgrades when the
// route allows them. The HCMs enable no upgrade themselves, so a route
// without this one refuses them.
func upgrades(r *ir.Route) []*routev3.RouteAction_UpgradeConfig {
	if !r.Websocket {
		return nil
	}
	return []*routev3.RouteAction_UpgradeConfig{{UpgradeType: "websocket"}}
}
