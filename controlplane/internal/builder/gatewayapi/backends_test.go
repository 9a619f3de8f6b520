package gatewayapi

import (
	"testing"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// A rule lets WebSocket upgrades through when one of its backends is a
// kubernetes.io/ws Service port (serviceBackend notes their clusters).
func TestWebSocketUpgrades(t *testing.T) {
	b := &routeBuild{webSocket: map[string]bool{"service/default/chat/8082": true}}
	for _, tc := range []struct {
		name     string
		clusters []ir.WeightedCluster
		want     bool
	}{
		{"none", nil, false},
		{"a WebSocket backend", []ir.WeightedCluster{{Cluster: "service/default/chat/8082", Weight: 1}}, true},
		{"beside an HTTP one", []ir.WeightedCluster{{Cluster: "service/default/echo/80", Weight: 1}, {Cluster: "service/default/chat/8082", Weight: 1}}, true},
		{"HTTP backends only", []ir.WeightedCluster{{Cluster: "service/default/echo/80", Weight: 1}}, false},
	} {
		if got := b.webSocketUpgrades(tc.clusters); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	if (&routeBuild{}).webSocketUpgrades([]ir.WeightedCluster{{Cluster: "c", Weight: 1}}) {
		t.Error("upgrades without any WebSocket backend")
	}
}
