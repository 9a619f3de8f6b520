package extension

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"google.golang.org/grpc"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/apis/projectcontour/v1alpha1"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/pipeline"
	"github.com/portcullis/portcullis/controlplane/internal/provider/file"
	"github.com/portcullis/portcullis/extension/sdk"
	"github.com/portcullis/portcullis/extension/sdk/sdktest"
)

// benchSet is the shape of e2e/bench/controlplane (and the pipeline's
// scale benchmark): n TLS roots with authorization, 5 routes and one
// include each.
func benchSet(b *testing.B, n int) *objects.Set {
	set, _, err := file.Load([]string{"../pipeline/testdata/common/secrets.yaml"})
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

// BenchmarkApplyChange measures Runner.Apply of a pass-through extension
// (sdk.Server{} over loopback gRPC) subscribed to the typical hooks, on
// the translation of one rebuild after one root changed, at 10,000 roots,
// as `portcullis serve` runs it: the pipeline with its caches (unchanged
// hosts keep their translated routes), and the runner with the answers of
// the previous Apply. Only Apply is timed.
func BenchmarkApplyChange(b *testing.B) {
	set := benchSet(b, 10000)
	opts := pipeline.DefaultOptions()
	var roots []int
	for i, p := range set.HTTPProxies {
		if p.Spec.VirtualHost != nil {
			roots = append(roots, i)
		}
	}
	change := func(set *objects.Set, i int) *objects.Set {
		next := *set
		next.HTTPProxies = append([]*contourv1.HTTPProxy(nil), set.HTTPProxies...)
		j := roots[(i*7919)%len(roots)]
		p := next.HTTPProxies[j].DeepCopy()
		p.Spec.Routes = append(p.Spec.Routes, contourv1.Route{Conditions: []contourv1.MatchCondition{{Prefix: fmt.Sprintf("/changed-%d", i)}},
			Services: []contourv1.Service{{Name: "svc-0", Port: 80}}})
		p.Generation++
		next.HTTPProxies[j] = p
		return &next
	}
	for _, hooks := range [][]Hook{
		{HookPostTranslateInsert, HookPostVirtualHostModify, HookPostHTTPListenerModify},
	} {
		b.Run(fmt.Sprint(len(hooks), "hooks"), func(b *testing.B) {
			// The HTTPS listener of 10,000 hosts is over gRPC's default
			// 4 MiB.
			addr := sdktest.Listen(b, &sdk.Server{}, grpc.MaxRecvMsgSize(DefaultMaxMessageSize), grpc.MaxSendMsgSize(DefaultMaxMessageSize))
			// The first Apply calls every hook of 10,000 hosts: a busy machine
			// needs more than the default budget.
			reg := Registration{Name: "bench", Address: addr, Hooks: hooks, Timeout: 30 * time.Second, PhaseBudget: time.Minute}
			conn, err := Dial(reg)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { conn.Close() })
			r, err := NewRunner(reg, conn)
			if err != nil {
				b.Fatal(err)
			}
			cache := pipeline.NewCache()
			cur := set
			res := pipeline.RunCached(cur, opts, cache)
			if _, failures := r.Apply(b.Context(), res.Resources, RefsOf(res.Build.Model)); len(failures) > 0 {
				b.Fatal(failures)
			}
			i := 0
			b.ResetTimer()
			for b.Loop() {
				b.StopTimer()
				i++
				cur = change(cur, i)
				res := pipeline.RunCached(cur, opts, cache)
				b.StartTimer()
				if _, failures := r.Apply(b.Context(), res.Resources, RefsOf(res.Build.Model)); len(failures) > 0 {
					b.Fatal(failures)
				}
			}
		})
	}
}
