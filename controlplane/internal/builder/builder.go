// Package builder validates a snapshot of input objects, resolves their
// references and computes the routing model (internal/ir) and the findings
// for each object's status. Its result is a pure function of its input (a
// Memo only saves work): no clients, no clocks, no goroutines.
//
// An invalid object never affects the others: a root HTTPProxy with an
// error is not served at all (never served half-configured, never without
// its authorization), a child with an error contributes no routes, and
// everything else is built as usual.
//
// The house has two front doors over one core, and this package runs them
// in order (Build):
//
//   - core: the snapshot of the input and the Resolver that records every
//     lookup, the global stage (ExtensionServices, delegations, the global
//     authorization, processing and rate limit service), and what both
//     front doors share: Services into clusters, certificates, external
//     authorization and processing servers, header and path checks, the
//     merged output;
//   - httpproxy: the HTTPProxy front door, one root at a time (buildRoot),
//     each a function of the root and of what it read;
//   - gatewayapi: the Gateway API front door, in one pass after the roots,
//     since it must see the host names they keep.
//
// Memo (memo.go) holds each front door's memo across rebuilds; no rule
// sees it.
package builder

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/builder/gatewayapi"
	"github.com/portcullis/portcullis/controlplane/internal/builder/httpproxy"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// Result is the output of one build.
type Result struct {
	Model *ir.Model
	// Status holds the findings for every HTTPProxy, ExtensionService and
	// TLSCertificateDelegation this control plane owns, and for the
	// Gateway API objects it owns (GatewayClasses naming its controller,
	// their Gateways, the routes attached to those: status.Object's
	// GatewayAPI), sorted.
	Status []*status.Object
	// Unavailable lists the problems of the global authorization and
	// processing (configuration file) whose ExtensionService is missing or
	// invalid: they fail closed and need an operator.
	Unavailable []status.Problem
	// GatewayServices are the Services of the Gateways with
	// Options.GatewayServicePerGateway (sorted by name): what the Services
	// labelled GatewayServiceLabel in Envoy's namespace should be; nil when
	// that cannot be said (no Envoy Service known), empty for none.
	GatewayServices []*corev1.Service
}

// Options are the control plane's settings that shape the build.
type Options = core.Options

// Bind is where a listener binds.
type Bind = core.Bind

// DefaultListeners are the shared listeners' binds when no flag says.
func DefaultListeners() (http, https Bind) { return core.DefaultListeners() }

// ExtensionClusterName is the Envoy cluster of an ExtensionService.
func ExtensionClusterName(namespace, name string) string {
	return core.ExtensionClusterName(namespace, name)
}

// DefaultAuthTimeout is the timeout of an authorization check that sets
// none.
const DefaultAuthTimeout = core.DefaultAuthTimeout

// SystemCASecretName is the SDS secret of the system's trust roots
// (Options.SystemCA).
const SystemCASecretName = core.SystemCASecretName

// Build computes the model and the status findings for one snapshot.
func Build(in *objects.Set, opts Options) *Result { return BuildCached(in, opts, nil) }

// BuildCached is Build reusing the result of roots whose inputs are
// unchanged since the previous build with memo (see Memo; nil for none).
// `portcullis serve` keeps one across rebuilds; the result is Build's.
//
// The build runs in two stages: the global stage validates what every root
// depends on (ExtensionServices, delegations, the global authorization and
// processing) and completes the snapshot with it; then each root is built
// on its own against the snapshot (buildRoot) and the results merged.
func BuildCached(in *objects.Set, opts Options, memo *Memo) *Result {
	snap := core.NewSnapshot(in, opts, memo.previous())
	model := core.NewModel(opts)
	b := core.NewMerged(core.BuildGlobalStage(snap, model))
	rootsMemo, gatewayMemo := memo.start(snap)
	defer memo.finish()
	roots := httpproxy.Roots(snap)
	results := make([]*httpproxy.RootResult, len(roots))
	for i, r := range roots {
		results[i] = rootsMemo.Root(snap, r.Proxy, r.Dup)
		httpproxy.Apply(b, model, results[i])
	}
	uses := rootsMemo.Keep(results)
	httpproxy.MarkOrphans(b, snap)
	addrs := core.EnvoyAddresses(snap)
	httpproxy.MarkLoadBalancer(b, results, addrs)
	services := gatewayapi.BuildGatewayAPI(snap, model, b, gatewayMemo, addrs)
	b.Finish(model, uses, memo.clusterCopies())

	if snap.Opts.GatewayServicePerGateway {
		// nil: the Envoy Service is not known (yet, or it is being
		// recreated), so nothing can be said of the Gateways' Services;
		// empty: there are none (their writer deletes what is left).
		ns, name, _ := strings.Cut(snap.Opts.EnvoyService, "/")
		if snap.Services[core.NsName(ns, name)] == nil {
			services = nil
		} else if services == nil {
			services = []*corev1.Service{}
		}
	}
	res := &Result{Model: model, GatewayServices: services}
	slices.SortFunc(res.GatewayServices, func(a, b *corev1.Service) int { return strings.Compare(a.Name, b.Name) })
	for _, p := range []*status.Problem{snap.Global.AuthProblem, snap.Global.ProcProblem} {
		if p != nil {
			res.Unavailable = append(res.Unavailable, *p)
		}
	}
	res.Status = slices.Clone(b.Out.Statuses())
	status.SortObjects(res.Status)
	memo.built(snap)
	return res
}
