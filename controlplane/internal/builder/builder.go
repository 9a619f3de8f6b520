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
// The shape: snapshot.go indexes the input (hosts.go decides which root
// keeps a host name); the global stage (global.go, extension.go, secret.go)
// validates what every root depends on and completes the snapshot; then
// each root is built by buildRoot (root.go), a function of the root and of
// what it reads through its Resolver (resolver.go), which records every
// lookup. The rules (walk.go, route.go and one file per concern: tls.go,
// extauth.go, extproc.go, services.go, headers.go, timeouts.go,
// conditions.go) never see the Memo (memo.go), which reuses a root's
// result while its recorded reads hold. The Gateway API's objects are
// built after the roots, in one pass (gateway.go).
package builder

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

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
	snap := newSnapshot(in, opts)
	model := newModel(opts)
	b := newMerged(buildGlobalStage(snap, model))
	rootsMemo, gatewayMemo := memo.start(snap)
	defer memo.finish()
	roots := roots(snap)
	results := make([]*rootResult, len(roots))
	for i, r := range roots {
		results[i] = rootsMemo.root(snap, r.proxy, r.dup)
		apply(b, model, results[i])
	}
	uses := rootsMemo.keep(results)
	markOrphans(b, snap)
	addrs := envoyAddresses(snap)
	markLoadBalancer(b, results, addrs)
	services := buildGatewayAPI(snap, model, b, gatewayMemo, addrs)
	b.finish(model, uses)

	if snap.opts.GatewayServicePerGateway {
		// nil: the Envoy Service is not known (yet, or it is being
		// recreated), so nothing can be said of the Gateways' Services;
		// empty: there are none (their writer deletes what is left).
		ns, name, _ := strings.Cut(snap.opts.EnvoyService, "/")
		if snap.services[nn(ns, name)] == nil {
			services = nil
		} else if services == nil {
			services = []*corev1.Service{}
		}
	}
	res := &Result{Model: model, GatewayServices: services}
	slices.SortFunc(res.GatewayServices, func(a, b *corev1.Service) int { return strings.Compare(a.Name, b.Name) })
	for _, p := range []*status.Problem{snap.global.authProblem, snap.global.procProblem} {
		if p != nil {
			res.Unavailable = append(res.Unavailable, *p)
		}
	}
	for _, o := range b.out.status {
		res.Status = append(res.Status, o)
	}
	status.SortObjects(res.Status)
	return res
}
