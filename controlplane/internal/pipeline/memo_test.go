package pipeline_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/pipeline"
)

// TestCachedRunsEqualFreshRuns checks the caches that `portcullis serve`
// keeps between rebuilds (builder.Memo, translator.Cache): for every golden
// case, a random sequence of changes, each applied the way providers do
// (new objects for changed ones, the same objects for the others), must
// give after every step exactly what a run without caches gives: the same
// document (statuses and xDS) and the same sources.
func TestCachedRunsEqualFreshRuns(t *testing.T) {
	cases, err := filepath.Glob("testdata/*/in.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const steps = 60
	for _, in := range cases {
		dir := filepath.Dir(in)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			set, _ := runPipeline(t, dir)
			opts := pipelineOptions(t, dir)
			rng := rand.New(rand.NewPCG(1, uint64(len(dir))))
			cache := pipeline.NewCache()
			reused := 0
			for step := 0; step <= steps; step++ {
				what := "initial"
				if step > 0 {
					set, what = mutate(rng, set)
				}
				cached := pipeline.RunCached(set, opts, cache)
				reused += cache.Build.Hits
				fresh := pipeline.Run(set, opts)
				if got, want := render(t, set, cached), render(t, set, fresh); got != want {
					t.Fatalf("step %d (%s): the cached run differs from a fresh run:\n%s", step, what, diff(want, got))
				}
				c, f := cached.Build.Sources, fresh.Build.Sources
				if !reflect.DeepEqual(c.VirtualHosts(), f.VirtualHosts()) || !reflect.DeepEqual(c.Clusters(), f.Clusters()) || !reflect.DeepEqual(c.Secrets(), f.Secrets()) {
					t.Fatalf("step %d (%s): sources differ:\ncached %v %v %v\nfresh  %v %v %v", step, what,
						c.VirtualHosts(), c.Clusters(), c.Secrets(), f.VirtualHosts(), f.Clusters(), f.Secrets())
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
	switch k := pick(11); {
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
