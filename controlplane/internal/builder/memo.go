package builder

import (
	"reflect"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// rootOut is everything building one root HTTPProxy contributes to the
// build: the findings of its walk (on the root and the HTTPProxies it
// includes), its virtual hosts, and the clusters, secrets and sources they
// use. Each root is built on its own and its output merged into the build
// (apply), so that a root's result depends only on what it read, never on
// the roots built before it; that is what lets a Memo reuse it.
type rootOut struct {
	status  map[objects.Ref]*status.Object
	visited map[types.NamespacedName]bool
	sources *sourceTracker

	insecure       []*ir.VirtualHost
	secure         *ir.SecureVirtualHost
	fallback       *ir.VirtualHost
	fallbackSecret string
	// clusters and secrets it uses (repeats included).
	clusters []*ir.Cluster
	secrets  []*ir.Secret

	// What the root read, to tell whether its output still holds.
	self     *contourv1.HTTPProxy
	dup      string // the DuplicateVhost message it was built with
	proxies  []dep[*contourv1.HTTPProxy]
	services []dep[*corev1.Service]
	slices   []dep[[]*discoveryv1.EndpointSlice]
	secretsR []dep[*corev1.Secret]
	// warnings are the parse warnings of the objects it has findings on.
	warnings []warningDep
}

type warningDep struct {
	ref objects.Ref
	got []string
}

// dep is one object a root looked up: what the lookup returned (nil for
// "not found").
type dep[T any] struct {
	key types.NamespacedName
	got T
}

func newRootOut(p *contourv1.HTTPProxy, dup string) *rootOut {
	return &rootOut{
		status: map[objects.Ref]*status.Object{}, visited: map[types.NamespacedName]bool{}, sources: newSourceTracker(),
		self: p, dup: dup,
	}
}

// Memo remembers, from one build to the next, the output of each root
// HTTPProxy and what it read. At scale a change touches one root, and
// building the other thousands again is most of a rebuild. A root's output
// is reused only when the root and every object it looked up are the same
// objects as last time (pointer-equal: providers hand out a new object for
// every change, and the build never modifies its input; or, for our own
// kinds, differing only in status, see sameObject) and nothing global
// changed (options, delegations, ExtensionServices); the result is the
// same as without the memo. A Memo is for one goroutine at a time; the
// zero value is not usable, use NewMemo.
type Memo struct {
	global globalInputs
	roots  map[types.NamespacedName]*rootOut
	// Hits and Misses count the roots of the last build.
	Hits, Misses int
}

// NewMemo returns an empty memo.
func NewMemo() *Memo { return &Memo{roots: map[types.NamespacedName]*rootOut{}} }

// globalInputs are what every root depends on.
type globalInputs struct {
	opts        Options
	delegations []*contourv1.TLSCertificateDelegation
	// extensions fingerprints what roots read of the ExtensionServices
	// (and what the global filters were resolved from).
	extensions string
}

func (g *globalInputs) equal(o *globalInputs) bool {
	return g.extensions == o.extensions && slices.EqualFunc(g.delegations, o.delegations, sameObject) && reflect.DeepEqual(g.opts, o.opts)
}

// sameObject reports whether a build reads the same from a and b: they
// are the same object, or b differs from a only in its status (see
// objects.SameButStatus: our own status writes, back from the API server).
func sameObject[T interface {
	comparable
	metav1.Object
}](a, b T) bool {
	var zero T
	return a == b || a != zero && b != zero && objects.SameButStatus(a, b)
}

// globalInputs of the build in progress (after buildExtensions).
func (b *builder) globalInputs() globalInputs {
	var ext []string
	for k, e := range b.extensions {
		cluster := ""
		if e.cluster != nil {
			cluster = e.cluster.Name
		}
		timeout := ""
		if e.timeout != nil {
			timeout = e.timeout.String()
		}
		ext = append(ext, strings.Join([]string{k.String(), cluster, e.authority, timeout, status.Summary(e.status)}, "\x00"))
	}
	sort.Strings(ext)
	return globalInputs{opts: b.opts, delegations: slices.Clone(b.in.Delegations), extensions: strings.Join(ext, "\x01")}
}

// startMemo decides which roots of the memo may be reused in this build.
func (b *builder) startMemo() {
	if b.memo == nil {
		return
	}
	g := b.globalInputs()
	if !b.memo.global.equal(&g) {
		b.memo.roots = map[types.NamespacedName]*rootOut{}
	}
	b.memo.global = g
	b.memo.Hits, b.memo.Misses = 0, 0
}

// reusable returns the memo's output of root p if it still holds.
func (b *builder) reusable(p *contourv1.HTTPProxy, dup string) *rootOut {
	if b.memo == nil {
		return nil
	}
	out := b.memo.roots[nn(p.Namespace, p.Name)]
	if out == nil || !sameObject(out.self, p) || out.dup != dup {
		return nil
	}
	for _, d := range out.proxies {
		if !sameObject(b.proxies[d.key], d.got) {
			return nil
		}
	}
	for _, d := range out.services {
		if b.services[d.key] != d.got {
			return nil
		}
	}
	for _, d := range out.slices {
		if !slices.Equal(b.slices[d.key], d.got) {
			return nil
		}
	}
	for _, d := range out.secretsR {
		if b.secrets[d.key] != d.got {
			return nil
		}
	}
	for _, d := range out.warnings {
		if !slices.Equal(b.in.Warnings[d.ref], d.got) {
			return nil
		}
	}
	return out
}

// The lookups of a root's build, recorded as its inputs. Outside a root
// (ExtensionServices, delegations) nothing is recorded: those are global
// inputs.

func (b *builder) lookupProxy(k types.NamespacedName) *contourv1.HTTPProxy {
	p := b.proxies[k]
	if b.cur != nil {
		b.cur.proxies = append(b.cur.proxies, dep[*contourv1.HTTPProxy]{k, p})
	}
	return p
}

func (b *builder) lookupService(k types.NamespacedName) *corev1.Service {
	s := b.services[k]
	if b.cur != nil {
		b.cur.services = append(b.cur.services, dep[*corev1.Service]{k, s})
	}
	return s
}

func (b *builder) lookupSlices(k types.NamespacedName) []*discoveryv1.EndpointSlice {
	s := b.slices[k]
	if b.cur != nil {
		b.cur.slices = append(b.cur.slices, dep[[]*discoveryv1.EndpointSlice]{k, s})
	}
	return s
}

func (b *builder) lookupSecret(k types.NamespacedName) *corev1.Secret {
	s := b.secrets[k]
	if b.cur != nil {
		b.cur.secretsR = append(b.cur.secretsR, dep[*corev1.Secret]{k, s})
	}
	return s
}

// usedCluster and usedSecret record a root's outputs that are shared with
// other roots (and deduplicated by name).
func (b *builder) usedCluster(c *ir.Cluster) {
	if b.cur != nil {
		b.cur.clusters = append(b.cur.clusters, c)
	}
}

func (b *builder) usedSecret(name string) {
	if b.cur != nil {
		b.cur.secrets = append(b.cur.secrets, b.secretsO[name])
	}
}

// rootBuild builds root p on its own: its findings, visits and sources go
// to its rootOut, not to the build's.
func (b *builder) rootBuild(p *contourv1.HTTPProxy, dup string) *rootOut {
	out := newRootOut(p, dup)
	buildStatus, buildVisited, buildSources := b.status, b.visited, b.sources
	b.status, b.visited, b.sources, b.cur = out.status, out.visited, out.sources, out
	defer func() { b.status, b.visited, b.sources, b.cur = buildStatus, buildVisited, buildSources, nil }()

	b.lookupProxy(nn(p.Namespace, p.Name))
	st := b.proxyStatus(p)
	if dup != "" {
		st.AddError(contourv1.ConditionTypeVirtualHostError, status.ReasonDuplicateVhost, dup)
	}
	b.buildRoot(out, p, st)
	return out
}

// apply merges a root's output into the build. out is never modified: it
// may be reused by the next build.
func (b *builder) apply(m *ir.Model, out *rootOut) {
	for ref, o := range out.status {
		g := b.statusOf(ref.Kind, ref.Namespace, ref.Name, o.Generation)
		for _, p := range o.Errors {
			g.AddError(p.Type, p.Reason, p.Message)
		}
		for _, p := range o.Warnings {
			g.AddWarning(p.Type, p.Reason, p.Message)
		}
	}
	for k := range out.visited {
		b.visited[k] = true
	}
	m.Insecure = append(m.Insecure, out.insecure...)
	if out.secure != nil {
		m.Secure = append(m.Secure, out.secure)
	}
	if out.fallback != nil {
		if m.Fallback == nil {
			m.Fallback = &ir.FallbackChain{Secret: out.fallbackSecret}
		}
		m.Fallback.VirtualHosts = append(m.Fallback.VirtualHosts, out.fallback)
	}
	for _, c := range out.clusters {
		if _, ok := b.clusters[c.Name]; !ok {
			b.clusters[c.Name] = c
		}
	}
	for _, s := range out.secrets {
		if _, ok := b.secretsO[s.Name]; !ok {
			b.secretsO[s.Name] = s
		}
	}
	b.rootSources = append(b.rootSources, out.sources)
}
