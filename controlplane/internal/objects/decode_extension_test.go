package objects

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Objects of the kinds an extension registered are kept as they are, in
// Set.Extensions; those of other kinds are skipped as before.
func TestDecodeExtensions(t *testing.T) {
	basicAuth := schema.GroupVersionKind{Group: "examples.portcullis.dev", Version: "v1alpha1", Kind: "BasicAuthFilter"}
	backend := schema.GroupVersionKind{Group: "examples.portcullis.dev", Version: "v1alpha1", Kind: "Backend"}
	tests := []struct {
		name        string
		kinds       []schema.GroupVersionKind
		in          string
		want        []string // group/kind namespace/name, in order
		wantSkipped []string
		wantErr     string
	}{
		{name: "a registered kind, fields intact", kinds: []schema.GroupVersionKind{basicAuth}, in: `
apiVersion: examples.portcullis.dev/v1alpha1
kind: BasicAuthFilter
metadata: {name: auth, namespace: team-a, labels: {app: web}}
spec: {realm: staff, users: [{name: ann, hash: "$2y$x"}], anything: {goes: true}}
`, want: []string{"examples.portcullis.dev/BasicAuthFilter team-a/auth"}},
		{name: "no namespace: default", kinds: []schema.GroupVersionKind{basicAuth}, in: `
apiVersion: examples.portcullis.dev/v1alpha1
kind: BasicAuthFilter
metadata: {name: auth}
`, want: []string{"examples.portcullis.dev/BasicAuthFilter default/auth"}},
		{name: "unregistered kinds are skipped", kinds: []schema.GroupVersionKind{basicAuth}, in: `
apiVersion: examples.portcullis.dev/v1alpha1
kind: OtherFilter
metadata: {name: o}
---
apiVersion: examples.portcullis.dev/v1beta1
kind: BasicAuthFilter
metadata: {name: other-version}
`, wantSkipped: []string{"in.yaml:1: examples.portcullis.dev/v1alpha1/OtherFilter", "in.yaml:2: examples.portcullis.dev/v1beta1/BasicAuthFilter"}},
		{name: "without registered kinds, skipped", in: `
apiVersion: examples.portcullis.dev/v1alpha1
kind: BasicAuthFilter
metadata: {name: auth}
`, wantSkipped: []string{"in.yaml:1: examples.portcullis.dev/v1alpha1/BasicAuthFilter"}},
		{name: "sorted by group, kind, namespace, name; in Lists too", kinds: []schema.GroupVersionKind{basicAuth, backend}, in: `
apiVersion: examples.portcullis.dev/v1alpha1
kind: BasicAuthFilter
metadata: {name: b, namespace: team-b}
---
apiVersion: examples.portcullis.dev/v1alpha1
kind: BasicAuthFilter
metadata: {name: z, namespace: team-a}
---
apiVersion: v1
kind: List
items:
- {apiVersion: examples.portcullis.dev/v1alpha1, kind: Backend, metadata: {name: x, namespace: team-c}}
- {apiVersion: examples.portcullis.dev/v1alpha1, kind: BasicAuthFilter, metadata: {name: a, namespace: team-b}}
`, want: []string{
			"examples.portcullis.dev/Backend team-c/x",
			"examples.portcullis.dev/BasicAuthFilter team-a/z",
			"examples.portcullis.dev/BasicAuthFilter team-b/a",
			"examples.portcullis.dev/BasicAuthFilter team-b/b",
		}},
		{name: "a registered object needs a name", kinds: []schema.GroupVersionKind{basicAuth}, in: `
apiVersion: examples.portcullis.dev/v1alpha1
kind: BasicAuthFilter
metadata: {generateName: auth-}
`, wantErr: "in.yaml:1: BasicAuthFilter has no metadata.name"},
		{name: "a kind Portcullis reads stays its own", kinds: []schema.GroupVersionKind{{Group: "projectcontour.io", Version: "v1", Kind: "HTTPProxy"}}, in: `
apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {name: p}
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Set{}
			skipped, err := s.Decode(strings.NewReader(tt.in), "in.yaml", tt.kinds...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			s.Sort()
			var got []string
			for _, u := range s.Extensions {
				got = append(got, fmt.Sprintf("%s/%s %s/%s", u.GroupVersionKind().Group, u.GetKind(), u.GetNamespace(), u.GetName()))
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("extensions %q, want %q", got, tt.want)
			}
			var gotSkipped []string
			for _, sk := range skipped {
				gotSkipped = append(gotSkipped, sk.Source+": "+sk.Kind)
			}
			if !reflect.DeepEqual(gotSkipped, tt.wantSkipped) {
				t.Errorf("skipped %q, want %q", gotSkipped, tt.wantSkipped)
			}
		})
	}
}

func TestDecodeExtensionKeepsFields(t *testing.T) {
	s := &Set{}
	_, err := s.Decode(strings.NewReader(`
apiVersion: examples.portcullis.dev/v1alpha1
kind: BasicAuthFilter
metadata: {name: auth, namespace: team-a, labels: {app: web}}
spec: {realm: staff, users: [{name: ann, hash: "$2y$x"}], anything: {goes: true}}
status: {seen: 1}
`), "in.yaml", schema.GroupVersionKind{Group: "examples.portcullis.dev", Version: "v1alpha1", Kind: "BasicAuthFilter"})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Extensions) != 1 {
		t.Fatalf("%d extension objects, want 1", len(s.Extensions))
	}
	u := s.Extensions[0]
	want := map[string]any{
		"realm":    "staff",
		"users":    []any{map[string]any{"name": "ann", "hash": "$2y$x"}},
		"anything": map[string]any{"goes": true},
	}
	if spec, _, _ := unstructured.NestedMap(u.Object, "spec"); !reflect.DeepEqual(spec, want) {
		t.Errorf("spec %v, want %v", spec, want)
	}
	if seen, _, _ := unstructured.NestedInt64(u.Object, "status", "seen"); seen != 1 {
		t.Errorf("status.seen %d, want 1", seen)
	}
	if u.GetLabels()["app"] != "web" || u.GetAPIVersion() != "examples.portcullis.dev/v1alpha1" {
		t.Errorf("labels %v, apiVersion %s", u.GetLabels(), u.GetAPIVersion())
	}
	if len(s.Warnings) != 0 {
		t.Errorf("warnings %v, want none (no schema to check against)", s.Warnings)
	}
}
