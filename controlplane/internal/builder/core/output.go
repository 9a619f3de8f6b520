package core

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/fields"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// Output is what one stage of the build (one root, or the global stage)
// contributes besides virtual hosts: its findings on the objects it
// checked, the clusters and secrets it uses (repeats included; shared with
// other stages, they are deduplicated by name when merged) and the objects
// that use them (origins.go).
type Output struct {
	Status                  map[objects.Ref]*status.Object
	Clusters                []*ir.Cluster
	Secrets                 []*ir.Secret
	ClusterUses, SecretUses Uses
	// order lists Status's values as Put added them: roots come sorted,
	// so the build's findings come out of it all but sorted (Statuses),
	// where a map gives them in random order to sort again.
	order []*status.Object
}

// Put records st as the findings of ref, which has none yet.
func (o *Output) Put(ref objects.Ref, st *status.Object) {
	o.Status[ref] = st
	o.order = append(o.order, st)
}

// Statuses are the findings of every object, in the order they were put;
// in the map's when some were not put (or put twice).
func (o *Output) Statuses() []*status.Object {
	if len(o.order) == len(o.Status) {
		return o.order
	}
	out := make([]*status.Object, 0, len(o.Status))
	for _, st := range o.Status {
		out = append(out, st)
	}
	return out
}

// NewOutput is an empty output.
func NewOutput() Output {
	return Output{Status: map[objects.Ref]*status.Object{}}
}

// Reserve makes room for n clusters and their uses: appending from
// nothing allocates at each doubling, several times for each root.
func (o *Output) Reserve(n int) {
	o.Clusters = slices.Grow(o.Clusters, n)
	o.ClusterUses = slices.Grow(o.ClusterUses, n)
}

// AddCluster records a cluster the stage uses.
func (o *Output) AddCluster(c *ir.Cluster) *ir.Cluster {
	o.Clusters = append(o.Clusters, c)
	return c
}

// UseSecret records a secret the stage uses.
func (o *Output) UseSecret(s *ir.Secret) { o.Secrets = append(o.Secrets, s) }

// Stage is one unit of the build: the Resolver it reads through and the
// output it writes to.
type Stage struct {
	R   *Resolver
	Out *Output
}

// StatusOf returns (creating) the findings of an object; new findings
// start with an error for each of its parse warnings.
func (s Stage) StatusOf(kind, namespace, name string, generation int64) *status.Object {
	ref := objects.Ref{Kind: kind, Namespace: namespace, Name: name}
	o, ok := s.Out.Status[ref]
	if !ok {
		o = &status.Object{Ref: ref, Generation: generation}
		for _, w := range s.R.Warnings(ref) {
			o.AddError(contourv1.ConditionTypeSpecError, DecodeComplaintReason(w), DecodeComplaintMessage(w))
		}
		s.Out.Put(ref, o)
	}
	return o
}

// specStatus returns (creating) the findings of an object of one of our
// kinds; new findings start with an error for each field of spec that the
// API has and portcullis does not implement (internal/fields). spec is a
// pointer: a struct in an interface is a copy, made on every call.
func (s Stage) specStatus(kind string, m metav1.Object, spec any) *status.Object {
	if o, ok := s.Out.Status[objects.Ref{Kind: kind, Namespace: m.GetNamespace(), Name: m.GetName()}]; ok {
		return o
	}
	o := s.StatusOf(kind, m.GetNamespace(), m.GetName(), m.GetGeneration())
	for _, f := range fields.Refuse(kind, spec) {
		o.AddError(contourv1.ConditionTypeSpecError, status.ReasonUnsupportedField, f.Message())
	}
	return o
}

// ProxyStatus returns (creating) the findings of an HTTPProxy.
func (s Stage) ProxyStatus(p *contourv1.HTTPProxy) *status.Object {
	return s.specStatus(KindHTTPProxy, p, &p.Spec)
}
