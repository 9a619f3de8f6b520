package builder

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/fields"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// What an object's fields alone say about it, before anything is built
// from them: the strict decoder's complaints and the fields portcullis
// does not implement. Each is an error: the object is not served.

// specStatus returns (creating) the findings of an object of one of our
// kinds; new findings start with an error for each field of spec that the
// API has and portcullis does not implement (internal/fields).
func (b *builder) specStatus(kind string, m metav1.Object, spec any) *status.Object {
	if o, ok := b.status[objects.Ref{Kind: kind, Namespace: m.GetNamespace(), Name: m.GetName()}]; ok {
		return o
	}
	o := b.statusOf(kind, m.GetNamespace(), m.GetName(), m.GetGeneration())
	for _, f := range fields.Refuse(kind, spec) {
		o.AddError(contourv1.ConditionTypeSpecError, status.ReasonUnsupportedField, f.Message())
	}
	return o
}

// decodeComplaintReason classifies one complaint of the strict decoder
// (objects.Set.Warnings): it reports only unknown and duplicate fields.
func decodeComplaintReason(complaint string) string {
	if strings.HasPrefix(complaint, "unknown field") {
		return status.ReasonUnknownField
	}
	return status.ReasonDuplicateField
}

// decodeComplaintMessage says what the complaint is about.
func decodeComplaintMessage(complaint string) string {
	if decodeComplaintReason(complaint) == status.ReasonUnknownField {
		return complaint + ": no such field in the API (misspelt?)"
	}
	return "a field given twice (only one value would be read): " + complaint
}
