package pipeline_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/pipeline"
	"github.com/portcullis/portcullis/controlplane/internal/pipeline/goldencase"
	"github.com/portcullis/portcullis/controlplane/internal/textdiff"
	"github.com/portcullis/portcullis/controlplane/internal/translator"
)

// TestCachedRunsEqualFreshRuns checks the caches that `portcullis serve`
// keeps between rebuilds (builder.Memo, translator.Cache): for every golden
// case, a random sequence of changes, each applied the way providers do
// (new objects for changed ones, the same objects for the others), must
// give after every step exactly what a run without caches gives: the same
// document (statuses and xDS) and the same model, origins included.
func TestCachedRunsEqualFreshRuns(t *testing.T) {
	dirs, err := goldencase.Runnable("testdata")
	if err != nil {
		t.Fatal(err)
	}
	const steps = 80
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			set, _ := runPipeline(t, dir)
			opts := pipelineOptions(t, dir)
			rng := rand.New(rand.NewPCG(1, uint64(len(dir))))
			// The host name contest's own changes, from their own source:
			// mutate's sequences stay as they were.
			crng := rand.New(rand.NewPCG(2, uint64(len(dir))))
			grng := rand.New(rand.NewPCG(3, uint64(len(dir))))
			cache := pipeline.NewCache()
			reused := 0
			// The previous result, rendered again at each step: a later
			// build must never modify a model it shares parts of.
			var prev *pipeline.Result
			var prevSet *objects.Set
			var prevDoc string
			for step := 0; step <= steps; step++ {
				what := "initial"
				if step > 0 {
					set, what = mutate(rng, set)
					if crng.IntN(4) == 0 {
						var also string
						set, also = contest(crng, set)
						what += ", " + also
					}
					if len(set.HTTPRoutes)+len(set.GRPCRoutes) > 0 && grng.IntN(2) == 0 {
						var also string
						set, also = mutateGatewayAPI(grng, set)
						what += ", " + also
					}
				}
				set = written(prevSet, set, step)
				cached := pipeline.RunCached(set, opts, cache)
				reused += cache.Build.Hits
				fresh := pipeline.Run(set, opts)
				if got, want := render(t, set, cached), render(t, set, fresh); got != want {
					t.Fatalf("step %d (%s): the cached run differs from a fresh run:\n%s", step, what, textdiff.Unified("fresh", "cached", want, got))
				}
				if prev != nil {
					if again := renderFresh(t, prevSet, prev, opts); again != prevDoc {
						t.Fatalf("step %d (%s): the previous build's model changed:\n%s", step, what, textdiff.Unified("before", "after", prevDoc, again))
					}
				}
				prev, prevSet, prevDoc = cached, set, renderFresh(t, set, cached, opts)
				c, err := encodeModel(cached.Build.Model)
				if err != nil {
					t.Fatal(err)
				}
				f, err := encodeModel(fresh.Build.Model)
				if err != nil {
					t.Fatal(err)
				}
				if string(c) != string(f) {
					t.Fatalf("step %d (%s): the cached model (origins included) differs from a fresh one:\n%s", step, what, textdiff.Unified("fresh", "cached", string(f), string(c)))
				}
			}
			if reused == 0 && len(set.HTTPProxies) > 1 {
				t.Errorf("no root was ever reused in %d steps: the memo is not exercised", steps)
			}
		})
	}
}

func render(t *testing.T, set *objects.Set, r *pipeline.Result) string {
	t.Helper()
	doc, err := pipeline.NewDocument(set, r, goldenNow)
	if err != nil {
		t.Fatal(err)
	}
	out, err := doc.Encode("yaml")
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// renderFresh renders r's build translated again without caches.
func renderFresh(t *testing.T, set *objects.Set, r *pipeline.Result, opts pipeline.Options) string {
	t.Helper()
	return render(t, set, &pipeline.Result{Build: r.Build, Resources: translator.Translate(r.Build.Model, opts.Translator)})
}

// contest returns a new set where one root claims another's host name
// (possibly in other letters) or gets another creation time, which
// decides who keeps a contested host name: created again (a new UID), or
// restored from a backup (the same UID and generation, which only the
// contest tells apart).
// mutateGatewayAPI changes an HTTPRoute (touches it, points a backend at
// another Service, changes a match, deletes it), drops a ReferenceGrant,
// or adds or drops a BackendTLSPolicy on a Service (whose backends then
// fail closed): the Memo keeps routes' rules across builds.
func mutateGatewayAPI(rng *rand.Rand, in *objects.Set) (*objects.Set, string) {
	out := *in
	out.HTTPRoutes = slices.Clone(in.HTTPRoutes)
	out.ReferenceGrants = slices.Clone(in.ReferenceGrants)
	out.BackendTLSPolicies = slices.Clone(in.BackendTLSPolicies)
	if len(out.ReferenceGrants) > 0 && rng.IntN(5) == 0 {
		i := rng.IntN(len(out.ReferenceGrants))
		name := out.ReferenceGrants[i].Name
		out.ReferenceGrants = slices.Delete(out.ReferenceGrants, i, i+1)
		return &out, "delete ReferenceGrant " + name
	}
	if len(out.Services) > 0 && rng.IntN(5) == 0 {
		svc := out.Services[rng.IntN(len(out.Services))]
		name := "memo-" + svc.Name
		if i := slices.IndexFunc(out.BackendTLSPolicies, func(p *gwapiv1.BackendTLSPolicy) bool {
			return p.Namespace == svc.Namespace && p.Name == name
		}); i >= 0 {
			out.BackendTLSPolicies = slices.Delete(out.BackendTLSPolicies, i, i+1)
			return &out, "delete BackendTLSPolicy " + name
		}
		out.BackendTLSPolicies = append(out.BackendTLSPolicies, &gwapiv1.BackendTLSPolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: svc.Namespace, Name: name},
			Spec: gwapiv1.BackendTLSPolicySpec{TargetRefs: []gwapiv1.LocalPolicyTargetReferenceWithSectionName{{
				LocalPolicyTargetReference: gwapiv1.LocalPolicyTargetReference{Kind: "Service", Name: gwapiv1.ObjectName(svc.Name)}}}},
		})
		slices.SortStableFunc(out.BackendTLSPolicies, func(a, b *gwapiv1.BackendTLSPolicy) int {
			return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
		})
		return &out, "add BackendTLSPolicy " + name
	}
	if len(out.HTTPRoutes) == 0 {
		return &out, "no HTTPRoute to change"
	}
	i := rng.IntN(len(out.HTTPRoutes))
	r := out.HTTPRoutes[i].DeepCopy()
	switch rng.IntN(4) {
	case 0:
		out.HTTPRoutes[i] = r
		return &out, "touch HTTPRoute " + r.Name
	case 1:
		out.HTTPRoutes = slices.Delete(out.HTTPRoutes, i, i+1)
		return &out, "delete HTTPRoute " + r.Name
	case 2:
		if len(r.Spec.Rules) > 0 && len(r.Spec.Rules[0].BackendRefs) > 0 && len(out.Services) > 0 {
			r.Spec.Rules[0].BackendRefs[0].Name = gwapiv1.ObjectName(out.Services[rng.IntN(len(out.Services))].Name)
		}
	case 3:
		if len(r.Spec.Rules) > 0 {
			path := fmt.Sprintf("/changed%d", rng.IntN(3))
			r.Spec.Rules[0].Matches = []gwapiv1.HTTPRouteMatch{{Path: &gwapiv1.HTTPPathMatch{Value: &path}}}
		}
	}
	r.Generation++
	out.HTTPRoutes[i] = r
	return &out, "edit HTTPRoute " + r.Name
}

func contest(rng *rand.Rand, in *objects.Set) (*objects.Set, string) {
	out := *in
	out.HTTPProxies = slices.Clone(in.HTTPProxies)
	var roots []int
	for i, p := range out.HTTPProxies {
		if p.Spec.VirtualHost != nil {
			roots = append(roots, i)
		}
	}
	if len(roots) == 0 {
		return &out, "no root to contest"
	}
	i := roots[rng.IntN(len(roots))]
	p := out.HTTPProxies[i].DeepCopy()
	out.HTTPProxies[i] = p
	if rng.IntN(2) == 0 {
		other := out.HTTPProxies[roots[rng.IntN(len(roots))]]
		p.Spec.VirtualHost.Fqdn = other.Spec.VirtualHost.Fqdn
		if rng.IntN(2) == 0 {
			p.Spec.VirtualHost.Fqdn = strings.ToUpper(p.Spec.VirtualHost.Fqdn)
		}
		p.Generation++
		return &out, "HTTPProxy " + p.Name + " claims " + p.Spec.VirtualHost.Fqdn
	}
	p.CreationTimestamp = metav1.NewTime(time.Date(2025, 1, 1+rng.IntN(3), 0, 0, 0, 0, time.UTC))
	if rng.IntN(2) == 0 {
		p.UID = types.UID(fmt.Sprintf("uid-%d", rng.Int()))
	}
	return &out, "creation time of HTTPProxy " + p.Name
}

// mutate returns a new set with one change, made the way providers make
// it: the changed object is a new object, every other one is shared.
func mutate(rng *rand.Rand, in *objects.Set) (*objects.Set, string) {
	out := *in
	out.HTTPProxies = slices.Clone(in.HTTPProxies)
	out.ExtensionServices = slices.Clone(in.ExtensionServices)
	out.Delegations = slices.Clone(in.Delegations)
	out.Secrets = slices.Clone(in.Secrets)
	out.Services = slices.Clone(in.Services)
	out.EndpointSlices = slices.Clone(in.EndpointSlices)
	out.Warnings = maps.Clone(in.Warnings)
	pick := func(n int) int { return rng.IntN(n) }
	switch k := pick(21); {
	case k < 5 && len(out.HTTPProxies) > 0:
		i := pick(len(out.HTTPProxies))
		p := out.HTTPProxies[i].DeepCopy()
		other := out.HTTPProxies[pick(len(out.HTTPProxies))]
		switch pick(7) {
		case 0:
			out.HTTPProxies[i] = p
			return &out, "touch HTTPProxy " + p.Name
		case 1:
			out.HTTPProxies = slices.Delete(out.HTTPProxies, i, i+1)
			return &out, "delete HTTPProxy " + p.Name
		case 2:
			if p.Spec.VirtualHost != nil && other.Spec.VirtualHost != nil {
				// Possibly a duplicate FQDN.
				p.Spec.VirtualHost.Fqdn = other.Spec.VirtualHost.Fqdn
			}
		case 3:
			if len(p.Spec.Routes) > 0 && len(p.Spec.Routes[0].Services) > 0 && len(out.Services) > 0 {
				p.Spec.Routes[0].Services[0].Name = out.Services[pick(len(out.Services))].Name
			}
		case 4:
			// Include another HTTPProxy (possibly a root, itself, or one
			// in a cycle).
			p.Spec.Includes = append(p.Spec.Includes, contourv1.Include{Name: other.Name, Namespace: other.Namespace,
				Conditions: []contourv1.MatchCondition{{Prefix: fmt.Sprintf("/inc%d", pick(3))}}})
		case 5:
			p.Spec.Includes = nil
		case 6:
			if len(p.Spec.Routes) > 0 {
				p.Spec.Routes[0].Conditions = []contourv1.MatchCondition{{Prefix: fmt.Sprintf("/changed%d", pick(3))}}
			}
		}
		p.Generation++
		out.HTTPProxies[i] = p
		return &out, "edit HTTPProxy " + p.Name
	case k == 5 && len(out.Services) > 0:
		i := pick(len(out.Services))
		s := out.Services[i].DeepCopy()
		if pick(2) == 0 && len(s.Spec.Ports) > 0 {
			s.Spec.Ports[0].Port++
		}
		out.Services[i] = s
		return &out, "edit Service " + s.Name
	case k == 6 && len(out.EndpointSlices) > 0:
		i := pick(len(out.EndpointSlices))
		s := out.EndpointSlices[i].DeepCopy()
		if pick(2) == 0 {
			s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{fmt.Sprintf("10.9.9.%d", pick(250))}})
		} else {
			s.Endpoints = nil
		}
		out.EndpointSlices[i] = s
		return &out, "edit EndpointSlice " + s.Name
	case k == 7 && len(out.Secrets) > 1:
		i, j := pick(len(out.Secrets)), pick(len(out.Secrets))
		s := out.Secrets[i].DeepCopy()
		// Another Secret's data: a certificate may become a CA bundle,
		// or invalid.
		s.Data, s.StringData = out.Secrets[j].Data, out.Secrets[j].StringData
		out.Secrets[i] = s
		return &out, "edit Secret " + s.Name
	case k == 8 && len(out.ExtensionServices) > 0:
		i := pick(len(out.ExtensionServices))
		e := out.ExtensionServices[i].DeepCopy()
		if pick(2) == 0 {
			e.Spec.TimeoutPolicy = &contourv1.TimeoutPolicy{Response: fmt.Sprintf("%ds", 1+pick(5))}
		} else {
			out.ExtensionServices = slices.Delete(out.ExtensionServices, i, i+1)
			return &out, "delete ExtensionService " + e.Name
		}
		out.ExtensionServices[i] = e
		return &out, "edit ExtensionService " + e.Name
	case k == 10 && len(out.HTTPProxies) > 0:
		// The file read again with a field the API does not know (or
		// without it): a new object, and its parse warning changes. Or
		// only the warning changes (another document of the same name,
		// in another file, came or went).
		i := pick(len(out.HTTPProxies))
		p := out.HTTPProxies[i]
		if pick(2) == 0 {
			p = p.DeepCopy()
			out.HTTPProxies[i] = p
		}
		ref := objects.Ref{Kind: "HTTPProxy", Namespace: p.Namespace, Name: p.Name}
		if out.Warnings == nil {
			out.Warnings = map[objects.Ref][]string{}
		}
		if _, ok := out.Warnings[ref]; ok {
			delete(out.Warnings, ref)
		} else {
			out.Warnings[ref] = []string{`unknown field "spec.surprise"`}
		}
		return &out, "parse warning of HTTPProxy " + p.Name
	case k == 11 && len(out.HTTPProxies) > 0:
		i := pick(len(out.HTTPProxies))
		p := out.HTTPProxies[i].DeepCopy()
		switch pick(6) {
		case 0:
			if p.Spec.VirtualHost != nil && p.Spec.VirtualHost.TLS != nil && len(out.Secrets) > 0 {
				p.Spec.VirtualHost.TLS.SecretName = out.Secrets[pick(len(out.Secrets))].Namespace + "/" + out.Secrets[pick(len(out.Secrets))].Name
			}
		case 1:
			if p.Spec.VirtualHost != nil && p.Spec.VirtualHost.TLS != nil {
				p.Spec.VirtualHost.TLS.EnableFallbackCertificate = !p.Spec.VirtualHost.TLS.EnableFallbackCertificate
			}
		case 2:
			p.Spec.VirtualHost = nil
		case 3:
			if p.Spec.VirtualHost == nil {
				p.Spec.VirtualHost = &contourv1.VirtualHost{Fqdn: fmt.Sprintf("new%d.example.com", pick(3))}
			}
		case 4:
			if p.Spec.IngressClassName == "" {
				p.Spec.IngressClassName = "other"
			} else {
				p.Spec.IngressClassName = ""
			}
		case 5:
			// A duplicate (another file with the same object).
			out.HTTPProxies = append(out.HTTPProxies, p)
			return &out, "duplicate HTTPProxy " + p.Name
		}
		p.Generation++
		out.HTTPProxies[i] = p
		return &out, "edit HTTPProxy " + p.Name
	case k == 12 && len(out.Delegations) > 0:
		i := pick(len(out.Delegations))
		d := out.Delegations[i].DeepCopy()
		for j := range d.Spec.Delegations {
			if pick(2) == 0 {
				d.Spec.Delegations[j].TargetNamespaces = []string{"*"}
			} else {
				d.Spec.Delegations[j].TargetNamespaces = nil
			}
		}
		d.Generation++
		out.Delegations[i] = d
		return &out, "edit delegation " + d.Name
	case k == 13 && len(out.Secrets) > 0:
		i := pick(len(out.Secrets))
		s := out.Secrets[i]
		out.Secrets = slices.Delete(out.Secrets, i, i+1)
		if pick(2) == 0 {
			out.Delegations = append(out.Delegations, &contourv1.TLSCertificateDelegation{})
			d := out.Delegations[len(out.Delegations)-1]
			d.Namespace, d.Name = s.Namespace, fmt.Sprintf("d%d", rng.Int())
			d.Spec.Delegations = []contourv1.CertificateDelegation{{SecretName: s.Name, TargetNamespaces: []string{"*"}}}
			out.Secrets = append(out.Secrets, s)
			return &out, "delegate Secret " + s.Name
		}
		return &out, "delete Secret " + s.Name
	case k == 14 && len(out.Services) > 0:
		i := pick(len(out.Services))
		s := out.Services[i].DeepCopy()
		if s.Spec.Type == corev1.ServiceTypeExternalName {
			s.Spec.Type, s.Spec.ExternalName = corev1.ServiceTypeClusterIP, ""
		} else {
			s.Spec.Type = corev1.ServiceTypeExternalName
			s.Spec.ExternalName = []string{"example.com", "localhost", "127.0.0.1"}[pick(3)]
		}
		out.Services[i] = s
		return &out, "externalname Service " + s.Name
	case k == 15 && len(out.EndpointSlices) > 0 && len(out.Services) > 0:
		i := pick(len(out.EndpointSlices))
		s := out.EndpointSlices[i].DeepCopy()
		if s.Labels == nil {
			s.Labels = map[string]string{}
		}
		s.Labels[discoveryv1.LabelServiceName] = out.Services[pick(len(out.Services))].Name
		out.EndpointSlices[i] = s
		return &out, "relabel slice " + s.Name
	case k == 16:
		// A parse warning on any object.
		var refs []objects.Ref
		for _, e := range out.ExtensionServices {
			refs = append(refs, objects.Ref{Kind: "ExtensionService", Namespace: e.Namespace, Name: e.Name})
		}
		for _, d := range out.Delegations {
			refs = append(refs, objects.Ref{Kind: "TLSCertificateDelegation", Namespace: d.Namespace, Name: d.Name})
		}
		if len(refs) == 0 {
			break
		}
		r := refs[pick(len(refs))]
		if out.Warnings == nil {
			out.Warnings = map[objects.Ref][]string{}
		}
		if _, ok := out.Warnings[r]; ok {
			delete(out.Warnings, r)
		} else {
			out.Warnings[r] = []string{"unknown field x"}
		}
		return &out, "warning " + r.String()
	case k == 17:
		// Reorder everything.
		rng.Shuffle(len(out.HTTPProxies), func(i, j int) { out.HTTPProxies[i], out.HTTPProxies[j] = out.HTTPProxies[j], out.HTTPProxies[i] })
		rng.Shuffle(len(out.EndpointSlices), func(i, j int) {
			out.EndpointSlices[i], out.EndpointSlices[j] = out.EndpointSlices[j], out.EndpointSlices[i]
		})
		return &out, "shuffle"
	case k == 18 && len(out.ExtensionServices) > 0:
		i := pick(len(out.ExtensionServices))
		e := out.ExtensionServices[i].DeepCopy()
		if len(e.Spec.Services) > 0 && len(out.Services) > 0 {
			e.Spec.Services[0].Name = out.Services[pick(len(out.Services))].Name
		}
		out.ExtensionServices[i] = e
		return &out, "ext service target " + e.Name
	case k == 19 && len(out.HTTPProxies) > 0:
		// Our own status write comes back from the API server: a new
		// object, the same generation. Or, when it has none yet (read
		// from a file), a first generation, as the API server gives.
		i := pick(len(out.HTTPProxies))
		p := out.HTTPProxies[i].DeepCopy()
		if p.Generation == 0 {
			p.Generation, p.UID = 1, "uid-1"
		} else {
			p.Status.Description = fmt.Sprintf("written %d", rng.Int())
		}
		out.HTTPProxies[i] = p
		if pick(2) == 0 && len(out.Delegations) > 0 {
			j := pick(len(out.Delegations))
			d := out.Delegations[j].DeepCopy()
			if d.Generation == 0 {
				d.Generation, d.UID = 1, "uid-1"
			} else {
				d.Status.Conditions = nil
			}
			out.Delegations[j] = d
		}
		return &out, "status of HTTPProxy " + p.Name
	case k == 20 && len(out.HTTPProxies) > 0:
		// Deleted and created again with another spec before the next
		// build: the same generation, another UID.
		i := pick(len(out.HTTPProxies))
		p := out.HTTPProxies[i].DeepCopy()
		p.UID = types.UID(fmt.Sprintf("uid-%d", rng.Int()))
		p.Spec.Includes = nil
		if len(p.Spec.Routes) > 0 {
			p.Spec.Routes = p.Spec.Routes[1:]
		}
		out.HTTPProxies[i] = p
		return &out, "recreate HTTPProxy " + p.Name
	case k == 9 && len(out.Delegations) > 0:
		i := pick(len(out.Delegations))
		d := out.Delegations[i]
		out.Delegations = slices.Delete(out.Delegations, i, i+1)
		return &out, "delete TLSCertificateDelegation " + d.Name
	}
	// Nothing of that kind to change: a new Service.
	out.Services = append(out.Services, &corev1.Service{})
	out.Services[len(out.Services)-1].Namespace, out.Services[len(out.Services)-1].Name = "default", fmt.Sprintf("new-%d", rng.Int())
	out.Sort()
	return &out, "add Service"
}

// written plays the API server's part in a step: every object of next that
// is not one of prev's (a write: a new object) gets a new resourceVersion,
// as every write does; the caches trust an unchanged one to mean unchanged
// content (objects.SameVersion). The objects the mutations wrote are
// copied first: they may be those of an earlier set.
func written(prev, next *objects.Set, step int) *objects.Set {
	if prev == nil {
		return next
	}
	old := map[any]bool{}
	pv, nv := reflect.ValueOf(prev).Elem(), reflect.ValueOf(next).Elem()
	for i := range pv.NumField() {
		if f := pv.Field(i); f.Kind() == reflect.Slice {
			for j := range f.Len() {
				old[f.Index(j).Interface()] = true
			}
		}
	}
	out := *next
	ov := reflect.ValueOf(&out).Elem()
	for i := range nv.NumField() {
		f := nv.Field(i)
		if f.Kind() != reflect.Slice {
			continue
		}
		c := reflect.AppendSlice(reflect.MakeSlice(f.Type(), 0, f.Len()), f)
		for j := range c.Len() {
			if o := c.Index(j).Interface(); !old[o] {
				w := o.(runtime.Object).DeepCopyObject()
				w.(metav1.Object).SetResourceVersion(fmt.Sprintf("written-%d", step))
				c.Index(j).Set(reflect.ValueOf(w))
			}
		}
		ov.Field(i).Set(c)
	}
	return &out
}
