package core

import (
	"encoding/json"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestExtensionJSON: an extension receives the same object from a cluster
// as from files: without status (the API server serves it, files usually
// do not have it; an extension that decodes strictly into a type without
// one would fail in a cluster only) and without metadata.managedFields
// (the API server's bookkeeping); spec and the rest of metadata intact.
func TestExtensionJSON(t *testing.T) {
	spec := map[string]any{"attempts": int64(3), "on": []any{"5xx"}}
	meta := map[string]any{"name": "retry", "namespace": "default", "labels": map[string]any{"app": "a"}}
	obj := func(extra map[string]any, managed bool) *unstructured.Unstructured {
		m := map[string]any{}
		for k, v := range meta {
			m[k] = v
		}
		if managed {
			m["managedFields"] = []any{map[string]any{"manager": "kubectl", "operation": "Apply"}}
		}
		o := map[string]any{"apiVersion": "example.vendor.io/v1", "kind": "RetryPolicy", "metadata": m, "spec": spec}
		for k, v := range extra {
			o[k] = v
		}
		return &unstructured.Unstructured{Object: o}
	}
	status := map[string]any{"status": map[string]any{"ancestors": []any{map[string]any{"ancestorRef": map[string]any{"name": "gw"}}}}}
	tests := []struct {
		name string
		in   *unstructured.Unstructured
	}{
		{"status and managedFields (from a cluster)", obj(status, true)},
		{"status only", obj(status, false)},
		{"managedFields only", obj(nil, true)},
		{"neither (from a file)", obj(nil, false)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.in.DeepCopy()
			js, err := ExtensionJSON(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := json.Unmarshal(js, &got); err != nil {
				t.Fatal(err)
			}
			if _, ok := got["status"]; ok {
				t.Errorf("status handed to the extension: %s", js)
			}
			if _, ok := got["metadata"].(map[string]any)["managedFields"]; ok {
				t.Errorf("managedFields handed to the extension: %s", js)
			}
			// Compared through JSON: numbers decode as float64.
			want := map[string]any{"apiVersion": "example.vendor.io/v1", "kind": "RetryPolicy", "metadata": meta, "spec": spec}
			wantJS, _ := json.Marshal(want)
			var wantObj map[string]any
			_ = json.Unmarshal(wantJS, &wantObj)
			if !reflect.DeepEqual(got, wantObj) {
				t.Errorf("got %s\nwant %s", js, wantJS)
			}
			// The builder's object is shared (the snapshot's): never modified.
			if !reflect.DeepEqual(tc.in.Object, before.Object) {
				t.Errorf("the input was modified: %v", tc.in.Object)
			}
		})
	}
}
