package objects

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/controlplane/internal/objects/crdschema"
)

// CRDComplaintPrefix starts a complaint of the CRD's validation
// (checkCRD): the API server would not store the object.
const CRDComplaintPrefix = "refused by the CRD's validation (the API server would not store it): "

// checkCRD runs the validation of the object's CRD (its schema and CEL
// rules, crdschema) on doc, a document read from a file: in a cluster
// the API server refuses what it refuses, so a file must not have it
// served. One complaint with every error; none for kinds without a CRD
// here.
func checkCRD(doc []byte, gvk schema.GroupVersionKind) ([]string, error) {
	if gvk.Group != gwapiv1.GroupName || !crdschema.Covers(gvk) {
		return nil, nil
	}
	errs, err := crdschema.Check(gvk, doc)
	if err != nil {
		// doc is JSON unless the strict conversion refused it (a
		// duplicate key, already a complaint): then the lenient one, as
		// kubectl.
		j, yerr := yaml.YAMLToJSON(doc)
		if yerr != nil {
			return nil, yerr
		}
		if errs, err = crdschema.Check(gvk, j); err != nil {
			return nil, err
		}
	}
	if len(errs) == 0 {
		return nil, nil
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return []string{CRDComplaintPrefix + strings.Join(msgs, "; ")}, nil
}

// hasStatus: the builder writes a status on objects of obj's kind, which
// can say that the CRD's validation refused it (a ReferenceGrant has no
// status).
func hasStatus(obj runtime.Object) bool {
	_, grant := obj.(*gwapiv1.ReferenceGrant)
	return !grant
}

// DropCRDComplaints removes the complaints of the CRD's validation from
// s: the objects as an API server with older CRDs, which let them in,
// would hold them (the builder's own rules are for those; its tests use
// this).
func (s *Set) DropCRDComplaints() {
	for ref, ws := range s.Warnings {
		s.Warnings[ref] = slices.DeleteFunc(ws, func(w string) bool { return strings.HasPrefix(w, CRDComplaintPrefix) })
	}
}
