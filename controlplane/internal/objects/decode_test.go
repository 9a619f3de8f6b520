package objects

import (
	"fmt"
	"strings"
	"testing"

	gatewayv1alpha1 "github.com/portcullis/portcullis/apis/gateway/v1alpha1"
)

func TestDecode(t *testing.T) {
	tests := []struct {
		name         string
		in           string
		wantProxies  []string // namespace/name, in order
		wantServices int
		wantSkipped  []string            // source: kind
		wantWarnings map[string][]string // per object, one substring per complaint
		wantErr      string
	}{
		{name: "defaults the namespace and keeps order", in: `
kind: HTTPProxy
apiVersion: projectcontour.io/v1
metadata: {name: b}
---
# a comment only
---
{"apiVersion": "projectcontour.io/v1", "kind": "HTTPProxy", "metadata": {"name": "a", "namespace": "team"}}
---
apiVersion: v1
kind: Service
metadata: {name: s}
`, wantProxies: []string{"default/b", "team/a"}, wantServices: 1},
		{name: "skips kinds it does not read", in: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: d}
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
`, wantSkipped: []string{"in.yaml:1: apps/v1/Deployment", "in.yaml:2: example.com/v1/Widget"}},
		{name: "an unknown field is recorded, the object is kept", in: `
apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {name: p}
spec: {virtualhost: {fqdn: a.example.com, timeout: 1s}}
`, wantProxies: []string{"default/p"}, wantWarnings: map[string][]string{"HTTPProxy default/p": {`unknown field "spec.virtualhost.timeout"`}}},
		{name: "one complaint per unknown field, each naming it", in: `
apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {name: p}
spec: {virtualhost: {fqdn: a.example.com, timeout: 1s}, routes: [{services: [{name: s, port: 80}], retries: 3}]}
`, wantProxies: []string{"default/p"}, wantWarnings: map[string][]string{"HTTPProxy default/p": {
			`unknown field "spec.routes[0].retries"`, `unknown field "spec.virtualhost.timeout"`}}},
		{name: "a duplicate key is recorded, the object is kept", in: `
apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {name: p}
spec:
  virtualhost: {fqdn: a.example.com}
  virtualhost: {fqdn: b.example.com}
`, wantProxies: []string{"default/p"}, wantWarnings: map[string][]string{"HTTPProxy default/p": {`key "virtualhost" already set in map`}}},
		{name: "lists are expanded", in: `
apiVersion: v1
kind: List
items:
- {apiVersion: projectcontour.io/v1, kind: HTTPProxy, metadata: {name: first}}
- {apiVersion: v1, kind: Pod, metadata: {name: c}}
- {apiVersion: projectcontour.io/v1, kind: HTTPProxy, metadata: {name: second}}
`, wantProxies: []string{"default/first", "default/second"}, wantSkipped: []string{"in.yaml:1[1]: v1/Pod"}},
		{name: "a broken document is an error naming it, after the objects before it", in: `
apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {name: ok}
---
apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {name: [broken
---
apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {name: after}
`, wantProxies: []string{"default/ok"}, wantErr: "in.yaml, document 2, line 3: "},
		{name: "an object without a name is an error naming it, after the objects before it", in: `
apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {name: ok}
---
apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {generateName: web-}
spec: {virtualhost: {fqdn: a.example.com}}
`, wantProxies: []string{"default/ok"}, wantErr: "in.yaml:2: HTTPProxy has no metadata.name"},
		{name: "a list item without a name is an error naming it", in: `
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Service, metadata: {namespace: team}}
`, wantErr: "in.yaml:1[0]: Service has no metadata.name"},
		{name: "a wrong type is an error", in: `
apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {name: p}
spec: {routes: 5}
`, wantErr: "in.yaml, document 1: spec.routes: expected a list, got a number"},
		{name: "a document that is not a Kubernetes object is skipped", in: `
processors: [{observe: {}}]
---
apiVersion: v1
kind: Service
metadata: {name: s}
`, wantServices: 1, wantSkipped: []string{"in.yaml:1: -"}},
		{name: "a kind without apiVersion is an error", in: `
kind: HTTPProxy
metadata: {name: p, annotations: {a: MARKER}}
`, wantErr: `in.yaml:1: kind "HTTPProxy" but no apiVersion`},
		{name: "an apiVersion without kind is an error", in: `
apiVersion: projectcontour.io/v1
metadata: {name: p, annotations: {a: MARKER}}
`, wantErr: `in.yaml:1: apiVersion "projectcontour.io/v1" but no kind`},
		{name: "an error does not quote the document", in: `
apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {name: p, annotations: {a: MARKER}}
spec: {routes: MARKER}
`, wantErr: "in.yaml, document 1: spec.routes: expected a list, got a string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s Set
			skipped, err := s.Decode(strings.NewReader(tt.in), "in.yaml")
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.wantErr)) {
				t.Fatalf("error = %v, want %q", err, tt.wantErr)
			}
			// A file can hold Secrets: an error names the document, never
			// quotes it.
			if err != nil && strings.Contains(err.Error(), "MARKER") {
				t.Errorf("error quotes the document: %v", err)
			}
			var proxies []string
			for _, p := range s.HTTPProxies {
				proxies = append(proxies, p.Namespace+"/"+p.Name)
			}
			if fmt.Sprint(proxies) != fmt.Sprint(tt.wantProxies) {
				t.Errorf("proxies = %v, want %v", proxies, tt.wantProxies)
			}
			if len(s.Services) != tt.wantServices {
				t.Errorf("%d services, want %d", len(s.Services), tt.wantServices)
			}
			var sk []string
			for _, k := range skipped {
				sk = append(sk, k.Source+": "+k.Kind)
			}
			if fmt.Sprint(sk) != fmt.Sprint(tt.wantSkipped) {
				t.Errorf("skipped = %v, want %v", sk, tt.wantSkipped)
			}
			if len(s.Warnings) != len(tt.wantWarnings) {
				t.Errorf("warnings = %v, want %v", s.Warnings, tt.wantWarnings)
			}
			for ref, ws := range s.Warnings {
				want, ok := tt.wantWarnings[ref.String()]
				if !ok || len(ws) != len(want) {
					t.Errorf("warnings of %s = %q, want %d", ref, ws, len(want))
					continue
				}
				for i := range ws {
					if !strings.Contains(ws[i], want[i]) {
						t.Errorf("warning %d of %s = %q, want it to contain %q", i, ref, ws[i], want[i])
					}
				}
			}
		})
	}
}

// Many documents are decoded in parallel and still added in order.
func TestDecodeKeepsOrder(t *testing.T) {
	var in strings.Builder
	for i := range 500 {
		fmt.Fprintf(&in, "apiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {name: p%d}\n---\n", i)
	}
	var s Set
	if _, err := s.Decode(strings.NewReader(in.String()), "many.yaml"); err != nil {
		t.Fatal(err)
	}
	for i, p := range s.HTTPProxies {
		if want := fmt.Sprintf("p%d", i); p.Name != want {
			t.Fatalf("proxy %d is %s, want %s", i, p.Name, want)
		}
	}
	if len(s.HTTPProxies) != 500 {
		t.Fatalf("%d proxies, want 500", len(s.HTTPProxies))
	}
}

// The policies of gateway.portcullis.dev are read, with the namespace
// defaulted, the strict decoder's complaints recorded under their kinds,
// and sorted, added and copied like the other kinds.
func TestDecodePolicies(t *testing.T) {
	in := `
apiVersion: gateway.portcullis.dev/v1alpha1
kind: ExtProcPolicy
metadata: {name: proc, namespace: team}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: r, sectionName: rule-1}]
  processor:
    grpcService: {extensionRef: {name: p}, failOpen: true}
    processingMode: {requestBodyMode: BUFFERED}
---
apiVersion: gateway.portcullis.dev/v1alpha1
kind: ExtAuthPolicy
metadata: {name: b-auth}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: g}]
  extensionRef: {name: authserver, namespace: auth}
  authPolicy: {context: {k: v}}
  responseTimeout: 1s
---
apiVersion: gateway.portcullis.dev/v1alpha1
kind: ExtAuthPolicy
metadata: {name: a-opt-out, namespace: default}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: r}]
  disabled: true
  globalExtAuthDisabled: true
---
apiVersion: gateway.portcullis.dev/v1alpha1
kind: ExtProcPolicy
metadata: {name: no-processing, namespace: default}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: g, sectionName: https}]
  disabled: true
---
apiVersion: gateway.portcullis.dev/v1beta1
kind: ExtAuthPolicy
metadata: {name: future}
`
	var s Set
	skipped, err := s.Decode(strings.NewReader(in), "policies.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// A version we do not serve is not read.
	if len(skipped) != 1 || skipped[0].Kind != "gateway.portcullis.dev/v1beta1/ExtAuthPolicy" {
		t.Errorf("skipped = %+v", skipped)
	}

	var o Set
	o.Add(&s)
	o.Sort()
	var auths, procs []string
	for _, p := range o.ExtAuthPolicies {
		auths = append(auths, p.Namespace+"/"+p.Name)
	}
	for _, p := range o.ExtProcPolicies {
		procs = append(procs, p.Namespace+"/"+p.Name)
	}
	if fmt.Sprint(auths) != "[default/a-opt-out default/b-auth]" || fmt.Sprint(procs) != "[default/no-processing team/proc]" {
		t.Fatalf("sorted policies: ExtAuthPolicies %v, ExtProcPolicies %v", auths, procs)
	}

	auth := o.ExtAuthPolicies[1].Spec
	if auth.Disabled || auth.ExtensionServiceRef == nil || auth.ExtensionServiceRef.Name != "authserver" || auth.ExtensionServiceRef.Namespace != "auth" ||
		auth.ResponseTimeout != "1s" || auth.AuthPolicy == nil || auth.AuthPolicy.Context["k"] != "v" ||
		len(auth.TargetRefs) != 1 || auth.TargetRefs[0].Kind != KindGateway || auth.TargetRefs[0].Name != "g" || auth.TargetRefs[0].SectionName != nil {
		t.Errorf("default/b-auth spec = %+v", auth)
	}
	if optOut := o.ExtAuthPolicies[0].Spec; !optOut.Disabled || optOut.ExtensionServiceRef != nil {
		t.Errorf("default/a-opt-out spec = %+v", optOut)
	}
	proc := o.ExtProcPolicies[1].Spec
	if proc.Disabled || proc.Processor == nil || proc.Processor.GRPCService == nil || proc.Processor.GRPCService.ExtensionServiceRef.Name != "p" ||
		!proc.Processor.GRPCService.FailOpen || proc.Processor.ProcessingMode == nil || proc.Processor.ProcessingMode.RequestBodyMode != "BUFFERED" ||
		len(proc.TargetRefs) != 1 || proc.TargetRefs[0].Kind != KindHTTPRoute || proc.TargetRefs[0].SectionName == nil || *proc.TargetRefs[0].SectionName != "rule-1" {
		t.Errorf("team/proc spec = %+v", proc)
	}
	if none := o.ExtProcPolicies[0].Spec; !none.Disabled || none.Processor != nil {
		t.Errorf("default/no-processing spec = %+v", none)
	}

	// An HTTPProxy-only field is not a policy's: recorded, under the
	// policy's kind, for its status.
	want := map[Ref]int{{Kind: KindExtAuthPolicy, Namespace: "default", Name: "a-opt-out"}: 1}
	if len(o.Warnings) != len(want) {
		t.Fatalf("warnings = %v", o.Warnings)
	}
	for ref, ws := range o.Warnings {
		if want[ref] != len(ws) || !strings.Contains(ws[0], `unknown field "spec.globalExtAuthDisabled"`) {
			t.Errorf("warnings of %s = %q", ref, ws)
		}
	}

	// The Scheme knows the kinds and their lists (the Kubernetes provider
	// watches with it).
	for _, kind := range []string{KindExtAuthPolicy, KindExtAuthPolicy + "List", KindExtProcPolicy, KindExtProcPolicy + "List"} {
		if !Scheme.Recognizes(gatewayv1alpha1.GroupVersion.WithKind(kind)) {
			t.Errorf("Scheme does not recognize %s", kind)
		}
	}
}

// BackendTLSPolicies are read (v1alpha3 as v1), with their namespace
// defaulted, so that the builder can fail the backends they target closed.
func TestDecodeBackendTLSPolicies(t *testing.T) {
	in := `
apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata: {name: b}
spec:
  targetRefs: [{group: "", kind: Service, name: echo, sectionName: https}]
  validation: {hostname: echo.example.com, wellKnownCACertificates: System}
---
apiVersion: gateway.networking.k8s.io/v1alpha3
kind: BackendTLSPolicy
metadata: {name: a, namespace: team}
spec:
  targetRefs: [{group: "", kind: Service, name: api}]
  validation: {hostname: api.example.com, wellKnownCACertificates: System}
`
	var s Set
	skipped, err := s.Decode(strings.NewReader(in), "btls.yaml")
	if err != nil || len(skipped) != 0 {
		t.Fatalf("skipped %+v, err %v", skipped, err)
	}
	s.Sort()
	var got []string
	for _, p := range s.BackendTLSPolicies {
		section := ""
		if sn := p.Spec.TargetRefs[0].SectionName; sn != nil {
			section = "#" + string(*sn)
		}
		got = append(got, fmt.Sprintf("%s %s/%s %s/%s%s", p.APIVersion, p.Namespace, p.Name, p.Spec.TargetRefs[0].Kind, p.Spec.TargetRefs[0].Name, section))
	}
	want := "[gateway.networking.k8s.io/v1 default/b Service/echo#https gateway.networking.k8s.io/v1 team/a Service/api]"
	if fmt.Sprint(got) != want {
		t.Errorf("BackendTLSPolicies = %v, want %v", got, want)
	}
	if len(s.Warnings) != 0 {
		t.Errorf("warnings %v", s.Warnings)
	}
}
