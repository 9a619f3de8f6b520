package pipeline_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/apis/projectcontour/v1alpha1"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/pipeline"
	"github.com/portcullis/portcullis/controlplane/internal/provider/file"
	"github.com/portcullis/portcullis/controlplane/internal/xdsserver"
)

// scaleSet is the scale shape: n TLS roots with authorization, 5
// routes and one include each (the same shape as e2e/bench/controlplane).
func scaleSet(b testing.TB, n int) *objects.Set {
	set, _, err := file.Load([]string{"testdata/common/secrets.yaml"})
	if err != nil {
		b.Fatal(err)
	}
	var cert *corev1.Secret
	for _, s := range set.Secrets {
		if s.Name == "echo" {
			cert = s.DeepCopy()
		}
	}
	cert.Namespace, cert.Name = "bench", "tls"
	out := &objects.Set{Secrets: []*corev1.Secret{cert}}
	svc := func(name string, port int32) {
		pn, tcp, ready := "main", corev1.ProtocolTCP, true
		out.Services = append(out.Services, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: name},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: pn, Port: port, Protocol: tcp}}}})
		out.EndpointSlices = append(out.EndpointSlices, &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: "bench", Name: name + "-1", Labels: map[string]string{discoveryv1.LabelServiceName: name}},
			AddressType: discoveryv1.AddressTypeIPv4, Ports: []discoveryv1.EndpointPort{{Name: &pn, Port: &port, Protocol: &tcp}},
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		})
	}
	svc("auth", 9000)
	for s := 0; s < 20; s++ {
		svc(fmt.Sprintf("svc-%d", s), 80)
	}
	out.ExtensionServices = []*v1alpha1.ExtensionService{{ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: "auth"},
		Spec: v1alpha1.ExtensionServiceSpec{Services: []v1alpha1.ExtensionServiceTarget{{Name: "auth", Port: 9000}}}}}
	for i := 0; i < n; i++ {
		root := &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: fmt.Sprintf("root-%d", i)}, Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{Fqdn: fmt.Sprintf("host-%d.bench.example.com", i), TLS: &contourv1.TLS{SecretName: "tls"},
				Authorization: &contourv1.AuthorizationServer{ExtensionServiceRef: contourv1.ExtensionServiceReference{Name: "auth"}}},
			Includes: []contourv1.Include{{Name: fmt.Sprintf("child-%d", i), Conditions: []contourv1.MatchCondition{{Prefix: "/child"}}}},
		}}
		for r := 0; r < 5; r++ {
			root.Spec.Routes = append(root.Spec.Routes, contourv1.Route{Conditions: []contourv1.MatchCondition{{Prefix: fmt.Sprintf("/r%d", r)}},
				Services: []contourv1.Service{{Name: fmt.Sprintf("svc-%d", (i+r)%20), Port: 80}}})
		}
		child := &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: fmt.Sprintf("child-%d", i)},
			Spec: contourv1.HTTPProxySpec{Routes: []contourv1.Route{{Services: []contourv1.Service{{Name: fmt.Sprintf("svc-%d", i%20), Port: 80}}}}}}
		out.HTTPProxies = append(out.HTTPProxies, root, child)
	}
	out.Sort()
	return out
}

// plainSet is the plain-HTTP shape: n roots without TLS, each with 2
// routes to a Service of its own, so that every host shares the one
// ingress_http route configuration and has its own cluster and endpoints.
func plainSet(n int) *objects.Set {
	out := &objects.Set{}
	pn, tcp, ready, port := "http", corev1.ProtocolTCP, true, int32(80)
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("app-%d", i)
		out.Services = append(out.Services, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "plain", Name: name},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: pn, Port: port, Protocol: tcp}}}})
		out.EndpointSlices = append(out.EndpointSlices, &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: "plain", Name: name + "-1", Labels: map[string]string{discoveryv1.LabelServiceName: name}},
			AddressType: discoveryv1.AddressTypeIPv4, Ports: []discoveryv1.EndpointPort{{Name: &pn, Port: &port, Protocol: &tcp}},
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255)}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		})
		root := &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "plain", Name: name}, Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{Fqdn: fmt.Sprintf("app-%d.plain.example.com", i)},
			Routes: []contourv1.Route{
				{Conditions: []contourv1.MatchCondition{{Prefix: "/api"}}, Services: []contourv1.Service{{Name: name, Port: 80}}},
				{Services: []contourv1.Service{{Name: name, Port: 80}}},
			},
		}}
		out.HTTPProxies = append(out.HTTPProxies, root)
	}
	out.Sort()
	return out
}

// shapes are the two input shapes, by name.
var shapes = []struct {
	name, describe string
	set            func(tb testing.TB, n int) *objects.Set
}{
	{"tls", "TLS roots with authorization, 5 routes and an include each, 20 Services", scaleSet},
	{"plain", "plain-HTTP roots, 2 routes and a Service each, one shared route configuration", func(_ testing.TB, n int) *objects.Set { return plainSet(n) }},
}

// BenchmarkPipeline measures build + translate at the scales (the
// e2e benchmark in e2e/bench/controlplane measures the CLI and Envoy).
func BenchmarkPipeline(b *testing.B) {
	for _, shape := range shapes {
		for _, n := range []int{100, 1000, 10000} {
			set := shape.set(b, n)
			b.Run(fmt.Sprintf("%s/%d", shape.name, n), func(b *testing.B) {
				for b.Loop() {
					res := pipeline.Run(set, pipeline.DefaultOptions())
					l := res.Build.Model.Listener(ir.HTTPListenerName)
					if shape.name == "tls" {
						l = res.Build.Model.Listener(ir.HTTPSListenerName)
					}
					if got := len(l.Insecure) + len(l.Secure); got != n {
						b.Fatalf("%d hosts, want %d", got, n)
					}
				}
			})
		}
	}
}

// rootChanger returns a function that returns set with its root i changed
// (one more path prefix; a new object, as providers hand out), the roots
// taken in turn.
func rootChanger(set *objects.Set) func(set *objects.Set, i int) *objects.Set {
	var roots []int
	for i, p := range set.HTTPProxies {
		if p.Spec.VirtualHost != nil {
			roots = append(roots, i)
		}
	}
	return func(set *objects.Set, i int) *objects.Set {
		next := *set
		next.HTTPProxies = append([]*contourv1.HTTPProxy(nil), set.HTTPProxies...)
		j := roots[i%len(roots)]
		p := next.HTTPProxies[j].DeepCopy()
		p.Spec.Routes[0].Conditions[0].Prefix = fmt.Sprintf("/changed-%d", i)
		p.Generation++ // a spec change, as the API server counts it
		next.HTTPProxies[j] = p
		return &next
	}
}

// BenchmarkPipelineChange measures one rebuild after a change to one root at
// 10,000 roots, as `portcullis serve` runs it (with the caches of the
// previous build) and without caches (as `portcullis translate` runs).
func BenchmarkPipelineChange(b *testing.B) {
	opts := pipeline.DefaultOptions()
	for _, shape := range shapes {
		set := shape.set(b, 10000)
		change := rootChanger(set)
		b.Run(shape.name+"/cached", func(b *testing.B) {
			cache := pipeline.NewCache()
			cur := set
			pipeline.RunCached(cur, opts, cache)
			i := 0
			for b.Loop() {
				i++
				cur = change(cur, i)
				pipeline.RunCached(cur, opts, cache)
			}
			if cache.Build.Misses != 1 {
				b.Fatalf("roots built %d; want 1", cache.Build.Misses)
			}
			if shape.name == "tls" && cache.Translate.Misses != 1 {
				b.Fatalf("hosts translated %d; want 1", cache.Translate.Misses)
			}
		})
		b.Run(shape.name+"/fresh", func(b *testing.B) {
			i := 0
			for b.Loop() {
				i++
				pipeline.Run(change(set, i), opts)
			}
		})
	}
	set := scaleSet(b, 10000)
	change := rootChanger(set)
	// In kubernetes mode our status writes come back as new objects (same
	// generation and UID): a rebuild after them still builds only the
	// changed root.
	b.Run("cached-after-status-writes", func(b *testing.B) {
		written := func(set *objects.Set, n int) *objects.Set {
			next := *set
			next.HTTPProxies = make([]*contourv1.HTTPProxy, len(set.HTTPProxies))
			for i, p := range set.HTTPProxies {
				p = p.DeepCopy()
				p.Generation, p.UID = max(p.Generation, 1), types.UID(p.Name)
				p.Status.Description = fmt.Sprintf("written %d", n)
				next.HTTPProxies[i] = p
			}
			return &next
		}
		cache := pipeline.NewCache()
		cur := written(set, 0)
		pipeline.RunCached(cur, opts, cache)
		i := 0
		for b.Loop() {
			i++
			b.StopTimer()
			cur = written(cur, i)
			b.StartTimer()
			cur = change(cur, i)
			pipeline.RunCached(cur, opts, cache)
		}
		if cache.Build.Misses != 1 {
			b.Fatalf("roots built %d; want 1", cache.Build.Misses)
		}
	})
}

// BenchmarkPublishChange measures what `portcullis serve` does for a
// change to one root at 10,000 roots: the cached rebuild, then its
// publication to the xDS server (hashing, checking and encoding what
// changed), with the caches and the server of the previous change.
func BenchmarkPublishChange(b *testing.B) {
	opts := pipeline.DefaultOptions()
	for _, shape := range shapes {
		set := shape.set(b, 10000)
		change := rootChanger(set)
		b.Run(shape.name, func(b *testing.B) {
			ctx := context.Background()
			srv := xdsserver.New(slog.New(slog.DiscardHandler))
			cache := pipeline.NewCache()
			cur := set
			if _, err := srv.Update(ctx, pipeline.RunCached(cur, opts, cache).Resources); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			i, last := 0, ""
			var publishing time.Duration
			for b.Loop() {
				i++
				cur = change(cur, i)
				res := pipeline.RunCached(cur, opts, cache)
				start := time.Now()
				version, err := srv.Update(ctx, res.Resources)
				publishing += time.Since(start)
				if err != nil {
					b.Fatal(err)
				}
				if version == last {
					b.Fatal("a change published nothing")
				}
				last = version
			}
			// The publication's part alone (the pipeline's is
			// BenchmarkPipelineChange's).
			b.ReportMetric(float64(publishing.Nanoseconds())/float64(b.N), "update-ns/op")
		})
	}
}
