package sdk

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kjson "sigs.k8s.io/json"

	"github.com/portcullis/portcullis/extension/api/v1alpha1"
)

// Unstructured decodes an extension resource into an unstructured object.
// It fails when the JSON is not an object or has no kind.
func Unstructured(r *v1alpha1.ExtensionResource) (*unstructured.Unstructured, error) {
	if len(r.GetUnstructuredJson()) == 0 {
		return nil, errors.New("extension resource: empty")
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(r.GetUnstructuredJson()); err != nil {
		return nil, fmt.Errorf("extension resource: %w", err)
	}
	return u, nil
}

// GroupVersionKind returns the apiVersion and kind of an extension
// resource, to tell the kinds of an extension that registered several
// apart before decoding.
func GroupVersionKind(r *v1alpha1.ExtensionResource) (schema.GroupVersionKind, error) {
	u, err := Unstructured(r)
	if err != nil {
		return schema.GroupVersionKind{}, err
	}
	return u.GroupVersionKind(), nil
}

// Decode decodes an extension resource into into, a pointer to the
// extension's Go type of the object (typically a struct embedding
// metav1.TypeMeta and with metav1.ObjectMeta, spec and status fields), as
// the Kubernetes API server decodes strictly: a field of the JSON that the
// type does not declare, a duplicate field or a field whose case differs
// from the type's is an error, naming the fields. Decoding is otherwise
// that of encoding/json (with integers kept as int64 in interface values).
func Decode(r *v1alpha1.ExtensionResource, into any) error {
	if len(r.GetUnstructuredJson()) == 0 {
		return errors.New("extension resource: empty")
	}
	strict, err := kjson.UnmarshalStrict(r.GetUnstructuredJson(), into)
	if err != nil {
		return fmt.Errorf("extension resource: %w", err)
	}
	if len(strict) > 0 {
		return fmt.Errorf("extension resource: strict decoding: %w", errors.Join(strict...))
	}
	return nil
}

// DecodeAs is Decode into a new T.
func DecodeAs[T any](r *v1alpha1.ExtensionResource) (*T, error) {
	v := new(T)
	if err := Decode(r, v); err != nil {
		return nil, err
	}
	return v, nil
}
