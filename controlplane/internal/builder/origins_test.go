package builder

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// A Memo's origins of clusters follow the roots kept from build to build,
// as gathered afresh without a memo, and are kept (not gathered again)
// when a root is built again with the same uses.
func TestMemoOrigins(t *testing.T) {
	a, b, child := proxyRef("ns", "a"), proxyRef("ns", "b"), proxyRef("ns", "child")
	result := func(root objects.Ref, u ...use) *rootResult {
		return &rootResult{self: &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: root.Namespace, Name: root.Name}},
			output: output{clusterUses: uses(u).compact()}}
	}
	rootA := result(a, use{"c", a}, use{"d", child})
	rootA2 := result(a, use{"c", a}, use{"d", child}) // built again, same uses
	rootA3 := result(a, use{"c", a})                  // built again, without d
	rootB := result(b, use{"c", b})
	tests := []struct {
		name   string
		builds [][]*rootResult
		want   map[string][]objects.Ref
	}{
		{"two roots", [][]*rootResult{{rootA, rootB}},
			map[string][]objects.Ref{"c": {a, b}, "d": {child}}},
		{"a root gone", [][]*rootResult{{rootA, rootB}, {rootA}},
			map[string][]objects.Ref{"c": {a}, "d": {child}}},
		{"a root new", [][]*rootResult{{rootA}, {rootA, rootB}},
			map[string][]objects.Ref{"c": {a, b}, "d": {child}}},
		{"a root built again without a use", [][]*rootResult{{rootA, rootB}, {rootA3, rootB}},
			map[string][]objects.Ref{"c": {a, b}, "d": nil}},
		{"a root built again with the same uses", [][]*rootResult{{rootA, rootB}, {rootA2, rootB}},
			map[string][]objects.Ref{"c": {a, b}, "d": {child}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newRootMemo()
			var got rootOrigins
			for _, results := range tt.builds {
				got = m.keep(results)
			}
			fresh := (*rootMemo)(nil).keep(tt.builds[len(tt.builds)-1])
			for name, want := range tt.want {
				if o := got.clusters.origins(name); fmt.Sprint(o) != fmt.Sprint(want) {
					t.Errorf("origins(%s) = %v, want %v", name, o, want)
				}
				if o := fresh.clusters.origins(name); fmt.Sprint(o) != fmt.Sprint(want) {
					t.Errorf("without a memo: origins(%s) = %v, want %v", name, o, want)
				}
			}
		})
	}

	m := newRootMemo()
	before := m.keep([]*rootResult{rootA, rootB}).clusters.origins("c")
	if after := m.keep([]*rootResult{rootA2, rootB}).clusters.origins("c"); &after[0] != &before[0] {
		t.Errorf("origins of c gathered again though no root's uses changed")
	}
}
