package harness

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/yaml"
)

// WriteYAML writes objs as one multi-document YAML file dir/name (for
// `portcullis serve --provider file`) and returns its path. The write is
// atomic, so a watcher never sees half a file.
func WriteYAML(t testing.TB, dir, name string, objs ...client.Object) string {
	t.Helper()
	b, err := MarshalYAML(objs...)
	if err != nil {
		t.Fatalf("WriteYAML %s: %v", name, err)
	}
	path := filepath.Join(dir, name)
	if err := writeAtomic(path, b); err != nil {
		t.Fatalf("WriteYAML: %v", err)
	}
	return path
}

// MarshalYAML renders objs as a multi-document YAML stream, as a user would
// write them: apiVersion and kind filled in from Scheme, no server-set
// metadata (uid, resourceVersion, ...), no empty status.
func MarshalYAML(objs ...client.Object) ([]byte, error) {
	var buf bytes.Buffer
	for i, obj := range objs {
		m, err := toManifest(obj)
		if err != nil {
			return nil, err
		}
		b, err := yaml.Marshal(m)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			buf.WriteString("---\n")
		}
		buf.Write(b)
	}
	return buf.Bytes(), nil
}

func toManifest(obj client.Object) (map[string]any, error) {
	gvk, err := apiutil.GVKForObject(obj, Scheme)
	if err != nil {
		return nil, err
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	m["apiVersion"], m["kind"] = gvk.GroupVersion().String(), gvk.Kind
	if meta, ok := m["metadata"].(map[string]any); ok {
		for _, k := range []string{"creationTimestamp", "resourceVersion", "uid", "generation", "managedFields"} {
			delete(meta, k)
		}
	}
	if st, ok := m["status"].(map[string]any); ok && emptyStatus(st) {
		delete(m, "status")
	}
	return m, nil
}

// emptyStatus: a status with no field set, such as an HTTPRoute's
// {parents: null}, which a user does not write (and Envoy Gateway's
// validation of a file refuses: parents is required in a status).
func emptyStatus(st map[string]any) bool {
	for _, v := range st {
		if v != nil {
			return false
		}
	}
	return true
}

func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// Apply creates each object, or updates it if it exists (retrying on
// conflicts, e.g. with a controller writing status). Like client.Update it
// fills in the objects from the server's answer.
func Apply(ctx context.Context, c client.Client, objs ...client.Object) error {
	for _, obj := range objs {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			existing := obj.DeepCopyObject().(client.Object)
			err := c.Get(ctx, client.ObjectKeyFromObject(obj), existing)
			if apierrors.IsNotFound(err) {
				return c.Create(ctx, obj)
			}
			if err != nil {
				return err
			}
			obj.SetResourceVersion(existing.GetResourceVersion())
			return c.Update(ctx, obj)
		})
		if err != nil {
			return fmt.Errorf("apply %s: %w", describe(obj), err)
		}
	}
	return nil
}

// Delete deletes each object; objects that don't exist are fine.
func Delete(ctx context.Context, c client.Client, objs ...client.Object) error {
	for _, obj := range objs {
		if err := c.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete %s: %w", describe(obj), err)
		}
	}
	return nil
}

// describe names an object as kind/namespace/name for messages and files.
func describe(obj client.Object) string {
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	if gvk, err := apiutil.GVKForObject(obj, Scheme); err == nil {
		kind = gvk.Kind
	}
	parts := []string{strings.ToLower(kind)}
	if ns := obj.GetNamespace(); ns != "" {
		parts = append(parts, ns)
	}
	return strings.Join(append(parts, obj.GetName()), "/")
}
