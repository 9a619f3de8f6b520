package controlplane

import (
	"slices"
	"testing"
)

func TestDiff(t *testing.T) {
	tests := []struct {
		want, have, added, removed []string
	}{
		{nil, nil, nil, nil},
		{[]string{"a", "b"}, nil, []string{"a", "b"}, nil},
		{nil, []string{"a"}, nil, []string{"a"}},
		{[]string{"a", "c", "d"}, []string{"b", "c", "e"}, []string{"a", "d"}, []string{"b", "e"}},
	}
	for _, tt := range tests {
		added, removed := diff(tt.want, tt.have)
		if !slices.Equal(added, tt.added) || !slices.Equal(removed, tt.removed) {
			t.Errorf("diff(%v, %v) = %v, %v; want %v, %v", tt.want, tt.have, added, removed, tt.added, tt.removed)
		}
	}
}
