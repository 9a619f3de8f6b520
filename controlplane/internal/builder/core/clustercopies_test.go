package core

import (
	"slices"
	"testing"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

func TestClusterCopies(t *testing.T) {
	a := &ir.Cluster{Name: "a"}
	p := objects.Ref{Kind: "HTTPProxy", Namespace: "ns", Name: "p"}
	q := objects.Ref{Kind: "HTTPProxy", Namespace: "ns", Name: "q"}
	cc := NewClusterCopies()

	cc.start()
	first := cc.copy(a, ir.Origins{p})
	cc.sweep(1)
	if first == a || len(first.Origins) != 1 || len(a.Origins) != 0 {
		t.Fatalf("the copy must carry the origins and leave the cluster alone: copy %+v, cluster %+v", first, a)
	}

	tests := []struct {
		name    string
		from    *ir.Cluster
		origins ir.Origins
		reused  bool
	}{
		{"same cluster, same origins", a, ir.Origins{p}, true},
		{"same cluster, other origins", a, ir.Origins{p, q}, false},
		{"another cluster of the name", &ir.Cluster{Name: "a"}, ir.Origins{p, q}, false},
	}
	last := first
	for _, tt := range tests {
		cc.start()
		got := cc.copy(tt.from, tt.origins)
		cc.sweep(1)
		if (got == last) != tt.reused {
			t.Errorf("%s: reused %v, want %v", tt.name, got == last, tt.reused)
		}
		if !slices.Equal(got.Origins, tt.origins) {
			t.Errorf("%s: origins %v, want %v", tt.name, got.Origins, tt.origins)
		}
		last = got
	}

	// A build without the cluster forgets it.
	cc.start()
	cc.copy(&ir.Cluster{Name: "b"}, nil)
	cc.sweep(1)
	if _, ok := cc.byName["a"]; ok {
		t.Error("a cluster the last build did not use is still kept")
	}

	var none *ClusterCopies // no memo: always a fresh copy
	none.start()
	if first, second := none.copy(a, nil), none.copy(a, nil); first == second {
		t.Error("without a memo, copies must not be shared")
	}
}

// TestClusterCopiesSort: a build that reuses every copy of the last gives
// the last build's sorted list; any other is sorted.
func TestClusterCopiesSort(t *testing.T) {
	b, a := &ir.Cluster{Name: "b"}, &ir.Cluster{Name: "a"}
	cc := NewClusterCopies()
	build := func(cs ...*ir.Cluster) []string {
		cc.start()
		var list []*ir.Cluster
		for _, c := range cs {
			list = append(list, cc.copy(c, nil))
		}
		cc.sweep(len(cs))
		var names []string
		for _, c := range cc.sort(list) {
			names = append(names, c.Name)
		}
		return names
	}
	for i, tt := range []struct {
		in   []*ir.Cluster
		want []string
	}{
		{[]*ir.Cluster{b, a}, []string{"a", "b"}},
		{[]*ir.Cluster{b, a}, []string{"a", "b"}},                         // all reused
		{[]*ir.Cluster{b}, []string{"b"}},                                 // one gone
		{[]*ir.Cluster{b, a}, []string{"a", "b"}},                         // one back: a new copy
		{[]*ir.Cluster{{Name: "a", DNSName: "x"}, b}, []string{"a", "b"}}, // a replaced, in its place
		{[]*ir.Cluster{{Name: "c"}, b}, []string{"b", "c"}},
	} {
		if got := build(tt.in...); !slices.Equal(got, tt.want) {
			t.Errorf("build %d: %v, want %v", i, got, tt.want)
		}
	}
}

// TestClusterCopiesSortPutsReplacedCopies: a copy made anew for a name of
// the last build is in the list, where the last one was.
func TestClusterCopiesSortPutsReplacedCopies(t *testing.T) {
	cc := NewClusterCopies()
	names := []string{"a", "b", "c", "d"}
	build := func(replace string) []*ir.Cluster {
		cc.start()
		var list []*ir.Cluster
		for _, n := range names {
			c := &ir.Cluster{Name: n}
			if n != replace {
				c = nil
			}
			list = append(list, cc.copy(clusterNamed(n, c), nil))
		}
		cc.sweep(len(names))
		return cc.sort(list)
	}
	build("")
	got := build("c")
	if got[2].Name != "c" || got[2] != cc.byName["c"].copy {
		t.Fatalf("the new copy of c is not in c's place: %v", got)
	}
	for i, n := range names {
		if got[i].Name != n {
			t.Fatalf("order %d: %s, want %s", i, got[i].Name, n)
		}
	}
}

// clusterNamed is c, or else the one cluster of that name the test keeps.
var keptClusters = map[string]*ir.Cluster{}

func clusterNamed(name string, c *ir.Cluster) *ir.Cluster {
	if c != nil {
		return c
	}
	if keptClusters[name] == nil {
		keptClusters[name] = &ir.Cluster{Name: name}
	}
	return keptClusters[name]
}

// TestMergedFinishFirstOfName: of clusters of one name added by several
// roots, the model has one, the first added, with every user's origins; the
// same with and without copies, and again from the copies of the last
// build.
func TestMergedFinishFirstOfName(t *testing.T) {
	p := objects.Ref{Kind: "HTTPProxy", Namespace: "ns", Name: "p"}
	q := objects.Ref{Kind: "HTTPProxy", Namespace: "ns", Name: "q"}
	a1, a2, b := &ir.Cluster{Name: "a"}, &ir.Cluster{Name: "a"}, &ir.Cluster{Name: "b"}
	roots := RootOrigins{Clusters: OriginsMap{"a": ir.Origins{p, q}, "b": ir.Origins{q}}}
	finish := func(cc *ClusterCopies) *ir.Model {
		m := &ir.Model{}
		merged := &Merged{Stage: Stage{Out: &Output{}}}
		merged.AddClusters([]*ir.Cluster{b, a1})
		merged.AddClusters(nil)
		merged.AddClusters([]*ir.Cluster{a2, b})
		merged.Finish(m, roots, cc)
		return m
	}
	cc := NewClusterCopies()
	for _, run := range []struct {
		name string
		cc   *ClusterCopies
	}{{"no copies", nil}, {"copies, first build", cc}, {"copies, again", cc}} {
		m := finish(run.cc)
		if len(m.Clusters) != 2 || m.Clusters[0].Name != "a" || m.Clusters[1].Name != "b" {
			t.Fatalf("%s: clusters %v, want a and b", run.name, m.Clusters)
		}
		if !slices.Equal(m.Clusters[0].Origins, ir.Origins{p, q}) || !slices.Equal(m.Clusters[1].Origins, ir.Origins{q}) {
			t.Errorf("%s: origins %v and %v", run.name, m.Clusters[0].Origins, m.Clusters[1].Origins)
		}
		if a1.Origins != nil || a2.Origins != nil {
			t.Errorf("%s: a root's cluster was modified", run.name)
		}
	}
	if len(cc.byName) != 2 || cc.byName["a"].from != a1 {
		t.Errorf("copies of %d names, a copied from %p; want 2, the first added (%p)", len(cc.byName), cc.byName["a"].from, a1)
	}
}
