package statuswriter

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/testapiserver"
)

// quotaCRD is an extension's policy kind, with a status subresource.
const quotaCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: quotas.example.vendor.io}
spec:
  group: example.vendor.io
  scope: Namespaced
  names: {plural: quotas, singular: quota, kind: Quota, listKind: QuotaList}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
          status: {type: object, x-kubernetes-preserve-unknown-fields: true}
`

// The ancestors of an extension's policy are written through the real
// API server's status subresource: ours replaced, another controller's
// and the extension's own status fields kept, nothing written when
// nothing changed.
func TestExtensionPolicyStatus(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "quota.yaml"), []byte(quotaCRD), 0o600); err != nil {
		t.Fatal(err)
	}
	api := testapiserver.Start(t, dir)
	ctx := context.Background()
	c := api.Client
	gvk := schema.GroupVersionKind{Group: "example.vendor.io", Version: "v1", Kind: "Quota"}
	q := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"requestsPerSecond": int64(10)}}}
	q.SetGroupVersionKind(gvk)
	q.SetNamespace("default")
	q.SetName("limits")
	if err := c.Create(ctx, q); err != nil {
		t.Fatal(err)
	}
	// The extension's own status field and another controller's ancestor.
	q.Object["status"] = map[string]any{
		"observedRate": int64(7),
		"ancestors": []any{map[string]any{
			"ancestorRef":    map[string]any{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "theirs"},
			"controllerName": otherController,
			"conditions": []any{map[string]any{"type": "Accepted", "status": "True", "reason": "Accepted", "message": "theirs",
				"lastTransitionTime": "2020-01-01T00:00:00Z"}},
		}},
	}
	if err := c.Status().Update(ctx, q); err != nil {
		t.Fatal(err)
	}

	k := &Kubernetes{Cache: c, Client: c, Log: slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))}
	ours := gwapiv1.PolicyAncestorStatus{
		AncestorRef:    gwapiv1.ParentReference{Group: ptr.To(gwapiv1.Group(gwapiv1.GroupName)), Kind: ptr.To(gwapiv1.Kind("HTTPRoute")), Name: "app"},
		ControllerName: DefaultGatewayController,
		Conditions:     []metav1.Condition{cond("Accepted", metav1.ConditionTrue, 1)},
	}
	u := Update{Ref: objects.Ref{Kind: "Quota", Namespace: "default", Name: "limits"}, ExtensionGVK: gvk,
		ExtensionPolicy: &gwapiv1.PolicyStatus{Ancestors: []gwapiv1.PolicyAncestorStatus{ours}}}
	k.Write(ctx, []Update{u})
	if k.StatusWrites() != 1 {
		t.Fatalf("%d status writes, want 1", k.StatusWrites())
	}

	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(gvk)
	if err := c.Get(ctx, client.ObjectKeyFromObject(q), got); err != nil {
		t.Fatal(err)
	}
	st := ExtensionPolicyStatus(got)
	if len(st.Ancestors) != 2 {
		t.Fatalf("ancestors %+v, want theirs and ours", st.Ancestors)
	}
	var mine, theirs int
	for _, a := range st.Ancestors {
		switch a.ControllerName {
		case DefaultGatewayController:
			mine++
			if a.AncestorRef.Name != "app" || len(a.Conditions) != 1 || a.Conditions[0].LastTransitionTime.IsZero() {
				t.Errorf("our ancestor = %+v", a)
			}
		case otherController:
			theirs++
		}
	}
	if mine != 1 || theirs != 1 {
		t.Errorf("ancestors %+v", st.Ancestors)
	}
	if rate, _, _ := unstructured.NestedInt64(got.Object, "status", "observedRate"); rate != 7 {
		t.Errorf("the extension's own status field was lost: %v", got.Object["status"])
	}

	// The same again: nothing to write.
	k.Write(ctx, []Update{u})
	if k.StatusWrites() != 1 {
		t.Errorf("%d status writes after an unchanged update, want still 1", k.StatusWrites())
	}
	if u.APIVersion() != "example.vendor.io/v1" {
		t.Errorf("APIVersion = %q", u.APIVersion())
	}
}
