package guard_test

import (
	"fmt"
	"slices"
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/extension/guard"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/pipeline"
)

// BenchmarkCheckListeners checks an answer that copies every listener and
// route configuration (a PostTranslateModify passing its input through,
// decoded anew as gRPC hands it over) of n plain hosts sharing one route
// configuration: the guard's cost per translate answer.
func BenchmarkCheckListeners(b *testing.B) {
	const n = 10000
	set := &objects.Set{}
	for i := range n {
		name := fmt.Sprintf("app-%d", i)
		set.Services = append(set.Services, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "plain", Name: name},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}})
		set.HTTPProxies = append(set.HTTPProxies, &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "plain", Name: name}, Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{Fqdn: name + ".plain.example.com"},
			Routes: []contourv1.Route{{Conditions: []contourv1.MatchCondition{{Prefix: "/api"}}, Services: []contourv1.Service{{Name: name, Port: 80}}},
				{Services: []contourv1.Service{{Name: name, Port: 80}}}},
		}})
	}
	set.Sort()
	res := pipeline.Run(set, pipeline.DefaultOptions()).Resources
	base := configOf(res)
	ours := map[string]bool{}
	for _, c := range base.clusters {
		ours[c] = true
	}
	after := base.clone()
	b.ResetTimer()
	for b.Loop() {
		if vs := guard.CheckListeners(func(c string) bool { return ours[c] }, base.guard(), after.guard()); len(vs) > 0 {
			b.Fatal(vs)
		}
	}
}

// BenchmarkCheckVirtualHostManyRoutes is the worst case of one virtual
// host: 2,000 routes, reversed in the answer (each compared with every
// route whose paths overlap its own: here all, under "/").
func BenchmarkCheckVirtualHostManyRoutes(b *testing.B) {
	const n = 2000
	in := &routev3.VirtualHost{Name: "many", Domains: []string{"many.example.com"}}
	for i := range n {
		in.Routes = append(in.Routes, &routev3.Route{
			Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: fmt.Sprintf("/r%d", i)}},
			Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: "c"}}},
		})
	}
	out := &routev3.VirtualHost{Name: in.Name, Domains: in.Domains, Routes: slices.Clone(in.Routes)}
	slices.Reverse(out.Routes)
	ours := func(string) bool { return true }
	for b.Loop() {
		guard.CheckVirtualHost(guard.Filters{}, ours, in, out)
	}
}
