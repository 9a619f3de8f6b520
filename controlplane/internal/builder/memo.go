package builder

import (
	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/builder/gatewayapi"
	"github.com/portcullis/portcullis/controlplane/internal/builder/httpproxy"
)

// Memo remembers, from one build to the next, the result of each root
// HTTPProxy and the rules of each Gateway API route, with what they read:
// at scale a change touches one object, and building the other thousands
// again is most of a rebuild. A result is reused only when its object and
// every object it looked up have the same content as last time (the same
// version, or for our own kinds differing only in status:
// core.SameObject) and nothing global changed (options, delegations,
// ExtensionServices); the result is the same as without the memo. A root
// built anew has its virtual hosts stamped (ir.VirtualHost.Stamp), which
// translator.Cache keys their translations by. docs/design/caches.md lists
// every cache, its key and what invalidates it. The rules never see it. A
// Memo is for one goroutine at a time; the zero value is not usable, use
// NewMemo.
type Memo struct {
	global core.GlobalInputs
	// roots keeps the root HTTPProxies' results (rootmemo.go).
	roots *httpproxy.RootMemo
	// gateway keeps the Gateway API routes' rules (gatewaymemo.go).
	gateway *gatewayapi.GatewayMemo
	// prev is the index of the last build's snapshot, whose results the
	// memo holds (nil while a build runs: one that does not end, say a
	// panic, leaves nothing a next snapshot could be patched from).
	prev *core.Index
	// clusters keeps the model's copies of the clusters.
	clusters *core.ClusterCopies
	// Hits and Misses count the roots of the last build.
	Hits, Misses int
}

// NewMemo returns an empty memo.
func NewMemo() *Memo {
	return &Memo{roots: httpproxy.NewRootMemo(), gateway: &gatewayapi.GatewayMemo{}, clusters: core.NewClusterCopies()}
}

// start begins a build of s: the results of the previous build hold only
// if its global inputs are s's.
// It returns the two front doors' memos (nil without a memo).
func (m *Memo) start(s *core.Snapshot) (*httpproxy.RootMemo, *gatewayapi.GatewayMemo) {
	if m == nil {
		return nil, nil
	}
	g := core.GlobalInputsOf(s)
	if !m.global.Equal(&g) {
		m.roots, m.gateway = httpproxy.NewRootMemo(), &gatewayapi.GatewayMemo{}
	}
	m.global = g
	m.roots.Start()
	return m.roots, m.gateway
}

// clusterCopies are the model's copies of the clusters (nil without a
// memo).
func (m *Memo) clusterCopies() *core.ClusterCopies {
	if m == nil {
		return nil
	}
	return m.clusters
}

// previous is the index of the last build's snapshot (nil for none),
// handed over to the build starting.
func (m *Memo) previous() *core.Index {
	if m == nil {
		return nil
	}
	prev := m.prev
	m.prev = nil
	return prev
}

// built records the snapshot of a build that ended.
func (m *Memo) built(s *core.Snapshot) {
	if m != nil {
		m.prev = s.Index()
	}
}

// finish ends a build: its counts are the roots memo's.
func (m *Memo) finish() {
	if m != nil {
		m.Hits, m.Misses = m.roots.Counts()
	}
}
