package builder

import (
	"strings"

	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// decodeComplaintReason classifies one complaint of the strict decoder
// (objects.Set.Warnings): it reports only unknown and duplicate fields.
func decodeComplaintReason(complaint string) string {
	if strings.HasPrefix(complaint, "unknown field") {
		return status.ReasonUnknownField
	}
	return status.ReasonDuplicateField
}

// decodeComplaintMessage says what the complaint costs: the object is not
// served, since the field the decoder could not read may be one that
// restricts access (a misspelt condition or policy is not an absent one).
func decodeComplaintMessage(complaint string) string {
	if decodeComplaintReason(complaint) == status.ReasonUnknownField {
		return complaint + ": no such field in the API (misspelt?)"
	}
	return "a field given twice (only one value would be read): " + complaint
}
