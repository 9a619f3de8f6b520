package pipeline_test

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/pipeline"
)

// gatewaySet is the Gateway API case of e2e/bench/controlplane: one Gateway
// with HTTP (80) and HTTPS (443) listeners, and n HTTPRoutes of their own
// host name with 5 rules to the 20 Services of scaleSet and a redirect each.
func gatewaySet(tb testing.TB, n int) *objects.Set {
	out := scaleSet(tb, 0)
	out.GatewayClasses = []*gwapiv1.GatewayClass{{ObjectMeta: metav1.ObjectMeta{Name: "portcullis"},
		Spec: gwapiv1.GatewayClassSpec{ControllerName: "portcullis.dev/gateway-controller"}}}
	https := gwapiv1.HTTPSProtocolType
	out.Gateways = []*gwapiv1.Gateway{{ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: "web"}, Spec: gwapiv1.GatewaySpec{
		GatewayClassName: "portcullis",
		Listeners: []gwapiv1.Listener{{Name: "http", Port: 80, Protocol: gwapiv1.HTTPProtocolType},
			{Name: "https", Port: 443, Protocol: https, TLS: &gwapiv1.ListenerTLSConfig{CertificateRefs: []gwapiv1.SecretObjectReference{{Name: "tls"}}}}},
	}}}
	prefix, port, scheme, code := gwapiv1.PathMatchPathPrefix, gwapiv1.PortNumber(80), "https", 301
	match := func(path string) []gwapiv1.HTTPRouteMatch {
		return []gwapiv1.HTTPRouteMatch{{Path: &gwapiv1.HTTPPathMatch{Type: &prefix, Value: &path}}}
	}
	for i := range n {
		r := &gwapiv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: fmt.Sprintf("route-%d", i), Generation: 1},
			Spec: gwapiv1.HTTPRouteSpec{CommonRouteSpec: gwapiv1.CommonRouteSpec{ParentRefs: []gwapiv1.ParentReference{{Name: "web"}}},
				Hostnames: []gwapiv1.Hostname{gwapiv1.Hostname(fmt.Sprintf("route-%d.bench.example.com", i))}}}
		for k := range 5 {
			r.Spec.Rules = append(r.Spec.Rules, gwapiv1.HTTPRouteRule{Matches: match(fmt.Sprintf("/r%d", k)),
				BackendRefs: []gwapiv1.HTTPBackendRef{{BackendRef: gwapiv1.BackendRef{BackendObjectReference: gwapiv1.BackendObjectReference{
					Name: gwapiv1.ObjectName(fmt.Sprintf("svc-%d", (i+k)%20)), Port: &port}}}}})
		}
		r.Spec.Rules = append(r.Spec.Rules, gwapiv1.HTTPRouteRule{Matches: match("/redirect"),
			Filters: []gwapiv1.HTTPRouteFilter{{Type: gwapiv1.HTTPRouteFilterRequestRedirect,
				RequestRedirect: &gwapiv1.HTTPRequestRedirectFilter{Scheme: &scheme, StatusCode: &code}}}})
		out.HTTPRoutes = append(out.HTTPRoutes, r)
	}
	out.Sort()
	return out
}

// changeRoute returns set with HTTPRoute i (in turn) given one more rule, a
// new object as providers hand out: the change e2e/bench/controlplane
// makes.
func changeRoute(set *objects.Set, i int) *objects.Set {
	next := *set
	next.HTTPRoutes = append([]*gwapiv1.HTTPRoute(nil), set.HTTPRoutes...)
	j := i % len(next.HTTPRoutes)
	r := next.HTTPRoutes[j].DeepCopy()
	extra := *r.Spec.Rules[len(r.Spec.Rules)-1].DeepCopy()
	path := fmt.Sprintf("/changed-%d", i)
	extra.Matches[0].Path.Value = &path
	r.Spec.Rules = append(r.Spec.Rules, extra)
	r.Generation++
	next.HTTPRoutes[j] = r
	return &next
}

// BenchmarkGatewayChange is BenchmarkPipelineChange for the Gateway API:
// one HTTPRoute changed at 10,000, rebuilt with the previous build's caches.
func BenchmarkGatewayChange(b *testing.B) {
	opts := pipeline.DefaultOptions()
	cache := pipeline.NewCache()
	cur := gatewaySet(b, 10000)
	res := pipeline.RunCached(cur, opts, cache)
	if len(res.Resources.Routes) == 0 {
		b.Fatal("no route configuration")
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		cur = changeRoute(cur, i)
		pipeline.RunCached(cur, opts, cache)
	}
}
