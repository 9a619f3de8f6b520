package core

import (
	"strings"

	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// What an object's fields alone say about it, before anything is built
// from them: the strict decoder's complaints and the fields portcullis
// does not implement (stage.specStatus). Each is an error: the object is
// not served.

// DecodeComplaintReason classifies one complaint of the strict decoder
// (objects.Set.Warnings): it reports only unknown and duplicate fields.
func DecodeComplaintReason(complaint string) string {
	switch {
	case strings.HasPrefix(complaint, "unknown field"):
		return status.ReasonUnknownField
	case strings.HasPrefix(complaint, objects.CRDComplaintPrefix):
		return status.ReasonCRDValidationFailed
	}
	return status.ReasonDuplicateField
}

// DecodeComplaintMessage says what the complaint is about.
func DecodeComplaintMessage(complaint string) string {
	switch DecodeComplaintReason(complaint) {
	case status.ReasonUnknownField:
		return complaint + ": no such field in the API (misspelt?)"
	case status.ReasonCRDValidationFailed:
		return complaint
	}
	return "a field given twice (only one value would be read): " + complaint
}
