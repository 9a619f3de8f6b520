package builder

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/fields"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// output is what one stage of the build (one root, or the global stage)
// contributes besides virtual hosts: its findings on the objects it
// checked, the clusters and secrets it uses (repeats included; shared with
// other stages, they are deduplicated by name when merged) and the objects
// that use them (origins.go).
type output struct {
	status                  map[objects.Ref]*status.Object
	clusters                []*ir.Cluster
	secrets                 []*ir.Secret
	clusterUses, secretUses uses
}

func newOutput() output {
	return output{status: map[objects.Ref]*status.Object{}}
}

// addCluster records a cluster the stage uses.
func (o *output) addCluster(c *ir.Cluster) *ir.Cluster {
	o.clusters = append(o.clusters, c)
	return c
}

// useSecret records a secret the stage uses.
func (o *output) useSecret(s *ir.Secret) { o.secrets = append(o.secrets, s) }

// stage is one unit of the build: the Resolver it reads through and the
// output it writes to.
type stage struct {
	r   *Resolver
	out *output
}

// statusOf returns (creating) the findings of an object; new findings
// start with an error for each of its parse warnings.
func (s stage) statusOf(kind, namespace, name string, generation int64) *status.Object {
	ref := objects.Ref{Kind: kind, Namespace: namespace, Name: name}
	o, ok := s.out.status[ref]
	if !ok {
		o = &status.Object{Ref: ref, Generation: generation}
		for _, w := range s.r.warnings(ref) {
			o.AddError(contourv1.ConditionTypeSpecError, decodeComplaintReason(w), decodeComplaintMessage(w))
		}
		s.out.status[ref] = o
	}
	return o
}

// specStatus returns (creating) the findings of an object of one of our
// kinds; new findings start with an error for each field of spec that the
// API has and portcullis does not implement (internal/fields).
func (s stage) specStatus(kind string, m metav1.Object, spec any) *status.Object {
	if o, ok := s.out.status[objects.Ref{Kind: kind, Namespace: m.GetNamespace(), Name: m.GetName()}]; ok {
		return o
	}
	o := s.statusOf(kind, m.GetNamespace(), m.GetName(), m.GetGeneration())
	for _, f := range fields.Refuse(kind, spec) {
		o.AddError(contourv1.ConditionTypeSpecError, status.ReasonUnsupportedField, f.Message())
	}
	return o
}

func (s stage) proxyStatus(p *contourv1.HTTPProxy) *status.Object {
	return s.specStatus(KindHTTPProxy, p, p.Spec)
}
