package builder

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// TestMemoProxyPolicies: a root's result is built again when the
// extension policies that win on its HTTPProxies change (one created,
// its spec changed), and reused when they do not (a policy on another
// HTTPProxy, a status written on the winner).
func TestMemoProxyPolicies(t *testing.T) {
	quotaGK := schema.GroupKind{Group: "example.vendor.io", Kind: "Quota"}
	opts := Options{Extensions: core.ExtensionKinds{Any: true, Policies: map[schema.GroupKind]bool{quotaGK: true}}}
	// The API server's generation says a spec changed (a status write
	// keeps it).
	quota := func(name, target string, rps, generation int64) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"requestsPerSecond": rps, "targetRefs": []any{
			map[string]any{"group": "projectcontour.io", "kind": "HTTPProxy", "name": target}}}}}
		u.SetGroupVersionKind(quotaGK.WithVersion("v1"))
		u.SetNamespace("default")
		u.SetName(name)
		u.SetGeneration(generation)
		return u
	}
	with := func(s *objects.Set, us ...*unstructured.Unstructured) *objects.Set {
		next := *s
		next.Extensions = us
		next.Sort()
		return &next
	}
	onRoot := quota("limits", "root", 10, 1)
	statusWritten := onRoot.DeepCopy()
	statusWritten.Object["status"] = map[string]any{"ancestors": []any{}}
	for _, tc := range []struct {
		name       string
		before     []*unstructured.Unstructured
		after      []*unstructured.Unstructured
		reused     bool
		wantPolicy bool
	}{
		{"no policy, then none", nil, nil, true, false},
		{"a policy on the root, created", nil, []*unstructured.Unstructured{onRoot}, false, true},
		{"a policy on another HTTPProxy, created", nil, []*unstructured.Unstructured{quota("other", "elsewhere", 10, 1)}, true, false},
		{"the winner's status written", []*unstructured.Unstructured{onRoot}, []*unstructured.Unstructured{statusWritten}, true, true},
		{"the winner's spec changed", []*unstructured.Unstructured{onRoot}, []*unstructured.Unstructured{quota("limits", "root", 20, 2)}, false, true},
		{"the winner deleted", []*unstructured.Unstructured{onRoot}, nil, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := &objects.Set{
				HTTPProxies: []*contourv1.HTTPProxy{proxy("root", "a.example.com", 1)},
				Services: []*corev1.Service{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "echo"},
					Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}},
			}
			memo := NewMemo()
			BuildCached(with(set, tc.before...), opts, memo)
			second := BuildCached(with(set, tc.after...), opts, memo)
			if got := memo.Hits == 1; got != tc.reused || memo.Hits+memo.Misses != 1 {
				t.Fatalf("hits %d, misses %d; want the root reused: %v", memo.Hits, memo.Misses, tc.reused)
			}
			r := second.Model.Listener(ir.HTTPListenerName).Insecure[0].Routes[0]
			if got := r.Extension != nil; got != tc.wantPolicy {
				t.Errorf("route extension %+v, want a policy: %v", r.Extension, tc.wantPolicy)
			}
		})
	}
}
