package httpproxy

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// A Memo's origins of clusters follow the roots kept from build to build,
// as gathered afresh without a memo, and are kept (not gathered again)
// when a root is built again with the same uses.
func TestMemoOrigins(t *testing.T) {
	a, b, child := ProxyRef("ns", "a"), ProxyRef("ns", "b"), ProxyRef("ns", "child")
	result := func(root objects.Ref, u ...core.Use) *RootResult {
		return &RootResult{self: &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: root.Namespace, Name: root.Name}},
			Output: core.Output{ClusterUses: core.Uses(u).Compact()}}
	}
	rootA := result(a, core.Use{Name: "c", Ref: a}, core.Use{Name: "d", Ref: child})
	rootA2 := result(a, core.Use{Name: "c", Ref: a}, core.Use{Name: "d", Ref: child}) // built again, same uses
	rootA3 := result(a, core.Use{Name: "c", Ref: a})                                  // built again, without d
	rootB := result(b, core.Use{Name: "c", Ref: b})
	tests := []struct {
		name   string
		builds [][]*RootResult
		want   map[string][]objects.Ref
	}{
		{"two roots", [][]*RootResult{{rootA, rootB}},
			map[string][]objects.Ref{"c": {a, b}, "d": {child}}},
		{"a root gone", [][]*RootResult{{rootA, rootB}, {rootA}},
			map[string][]objects.Ref{"c": {a}, "d": {child}}},
		{"a root new", [][]*RootResult{{rootA}, {rootA, rootB}},
			map[string][]objects.Ref{"c": {a, b}, "d": {child}}},
		{"a root built again without a use", [][]*RootResult{{rootA, rootB}, {rootA3, rootB}},
			map[string][]objects.Ref{"c": {a, b}, "d": nil}},
		{"a root built again with the same uses", [][]*RootResult{{rootA, rootB}, {rootA2, rootB}},
			map[string][]objects.Ref{"c": {a, b}, "d": {child}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := NewRootMemo()
			var got core.RootOrigins
			for _, results := range tt.builds {
				got = m.Keep(results)
			}
			fresh := (*RootMemo)(nil).Keep(tt.builds[len(tt.builds)-1])
			for name, want := range tt.want {
				if o := got.Clusters.Origins(name); fmt.Sprint(o) != fmt.Sprint(want) {
					t.Errorf("origins(%s) = %v, want %v", name, o, want)
				}
				if o := fresh.Clusters.Origins(name); fmt.Sprint(o) != fmt.Sprint(want) {
					t.Errorf("without a memo: origins(%s) = %v, want %v", name, o, want)
				}
			}
		})
	}

	m := NewRootMemo()
	before := m.Keep([]*RootResult{rootA, rootB}).Clusters.Origins("c")
	if after := m.Keep([]*RootResult{rootA2, rootB}).Clusters.Origins("c"); &after[0] != &before[0] {
		t.Errorf("origins of c gathered again though no root's uses changed")
	}
}
