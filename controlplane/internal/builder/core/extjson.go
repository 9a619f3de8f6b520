package core

import (
	"maps"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ExtensionJSON is the object as the extension receives it (every
// ExtensionResource it is handed is made here), the same from a cluster
// as from files: without status, which the API server serves and files
// seldom have (an extension decoding strictly into a type without one
// would fail in a cluster only; Portcullis writes a policy's, and the
// memos take objects differing only in status as unchanged), and without
// metadata.managedFields (the API server's bookkeeping, which changes on
// every write and would defeat the hook cache).
func ExtensionJSON(u *unstructured.Unstructured) ([]byte, error) {
	meta, _ := u.Object["metadata"].(map[string]any)
	_, managed := meta["managedFields"]
	_, status := u.Object["status"]
	if managed || status {
		// Shallow copies: u is the snapshot's, never modified.
		obj := maps.Clone(u.Object)
		delete(obj, "status")
		if managed {
			meta = maps.Clone(meta)
			delete(meta, "managedFields")
			obj["metadata"] = meta
		}
		u = &unstructured.Unstructured{Object: obj}
	}
	return u.MarshalJSON()
}
