package apis_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"sigs.k8s.io/yaml"

	gatewayv1alpha1 "github.com/portcullis/portcullis/apis/gateway/v1alpha1"
	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
)

// TestPolicySchemasValidateTheSpec edits the policy samples in one place
// and expects the API server's validation (schema and CEL rules) to reject
// the edit at that place with that message, or to accept it.
func TestPolicySchemasValidateTheSpec(t *testing.T) {
	all := schemas(t)
	samples := sampleObjects(t)
	auth := samples["gateway-api-policies.yaml#0"]
	authOptOut := samples["gateway-api-policies.yaml#2"]
	proc := samples["gateway-api-policies.yaml#3"]
	procOptOut := samples["gateway-api-policies.yaml#4"]
	if auth == nil || authOptOut == nil || proc == nil || procOptOut == nil {
		t.Fatal("sample missing")
	}
	for name, obj := range map[string]map[string]any{"auth": auth, "authOptOut": authOptOut, "proc": proc, "procOptOut": procOptOut} {
		if errs := schemaFor(t, all, obj).validate(obj); len(errs) > 0 {
			t.Fatalf("%s sample invalid: %v", name, errs.ToAggregate())
		}
	}

	target := func(kind, name string, section ...string) map[string]any {
		r := map[string]any{"group": "gateway.networking.k8s.io", "kind": kind, "name": name}
		if len(section) > 0 {
			r["sectionName"] = section[0]
		}
		return r
	}
	var seventeen []any
	for i := range 17 {
		seventeen = append(seventeen, target("HTTPRoute", fmt.Sprintf("r%d", i)))
	}
	const (
		kindsMsg        = "targetRefs may name only a Gateway, an HTTPRoute or a GRPCRoute of group gateway.networking.k8s.io"
		authRequiredMsg = "extensionRef is required unless disabled is true"
		authAloneMsg    = "disabled: true switches authorization off and takes no extensionRef"
		procRequiredMsg = "processor is required unless disabled is true"
		procServiceMsg  = "processor.grpcService.extensionRef is required"
		procAloneMsg    = "disabled: true switches processing off and takes no processor"
		onceMsg         = "the settings are given once: at the top of spec, in defaults or in overrides"
	)
	ref := map[string]any{"name": "a"}
	withSpec := func(base map[string]any, spec map[string]any) map[string]any {
		obj := deepCopyJSON(t, base)
		obj["spec"] = spec
		return obj
	}
	authOverrides := withSpec(authOptOut, map[string]any{"targetRefs": []any{target("Gateway", "g")}, "overrides": map[string]any{"extensionRef": ref}})
	procDefaults := withSpec(procOptOut, map[string]any{"targetRefs": []any{target("Gateway", "g")}, "defaults": map[string]any{"processor": map[string]any{"grpcService": map[string]any{"extensionRef": ref}}}})

	for _, tc := range []struct {
		name  string
		base  map[string]any
		path  string // dotted path; numbers index lists
		value any    // nil deletes
		want  string // "" for accepted, else expected in the error
	}{
		// targetRefs, the same in both kinds.
		{"no targetRefs", auth, "spec.targetRefs", nil, "spec.targetRefs: Required value"},
		{"empty targetRefs", proc, "spec.targetRefs", []any{}, "spec.targetRefs"},
		{"17 targetRefs", auth, "spec.targetRefs", seventeen, "spec.targetRefs: Too many"},
		{"16 targetRefs", proc, "spec.targetRefs", seventeen[:16], ""},
		{"target a Service", auth, "spec.targetRefs.0", map[string]any{"group": "", "kind": "Service", "name": "s"}, kindsMsg},
		{"target a TCPRoute", proc, "spec.targetRefs.1", target("TCPRoute", "t"), kindsMsg},
		{"target a Gateway of another group", auth, "spec.targetRefs.0.group", "example.com", kindsMsg},
		{"target an HTTPProxy", proc, "spec.targetRefs.0", map[string]any{"group": "projectcontour.io", "kind": "HTTPProxy", "name": "p"}, kindsMsg},
		{"target a GRPCRoute rule", auth, "spec.targetRefs.1", target("GRPCRoute", "g", "rule-1"), ""},
		{"target without name", auth, "spec.targetRefs.0.name", nil, "spec.targetRefs[0].name"},
		{"same target twice", auth, "spec.targetRefs.1", target("Gateway", "public"), "sectionName must be unique"},
		{"a target and one of its sections", proc, "spec.targetRefs.1", target("Gateway", "public"), "sectionName must be specified"},
		{"two sections of one target", proc, "spec.targetRefs.1", target("Gateway", "public", "http"), ""},
		{"one section twice", proc, "spec.targetRefs.1", target("Gateway", "public", "https"), "sectionName must be unique"},

		// ExtAuthPolicy.
		{"auth without extensionRef", auth, "spec.extensionRef", nil, authRequiredMsg},
		{"auth disabled false without extensionRef", authOptOut, "spec.disabled", false, authRequiredMsg},
		{"auth extensionRef without name", auth, "spec.extensionRef.name", nil, "spec.extensionRef.name"},
		{"auth timeout not a duration", auth, "spec.responseTimeout", "soon", "spec.responseTimeout"},
		{"auth maxRequestBytes 0", auth, "spec.withRequestBody.maxRequestBytes", 0, "spec.withRequestBody.maxRequestBytes"},
		{"auth disabled with extensionRef", auth, "spec.disabled", true, authAloneMsg},
		{"auth opt-out with timeout", authOptOut, "spec.responseTimeout", "1s", authAloneMsg},
		{"auth opt-out with authPolicy", authOptOut, "spec.authPolicy", map[string]any{"disabled": true}, authAloneMsg},
		{"auth opt-out with withRequestBody", authOptOut, "spec.withRequestBody", map[string]any{}, authAloneMsg},
		{"auth opt-out failing open", authOptOut, "spec.failOpen", true, authAloneMsg},
		{"auth opt-out not failing open", authOptOut, "spec.failOpen", false, ""},
		{"auth only authPolicy", authOptOut, "spec", map[string]any{"targetRefs": []any{target("Gateway", "g")}, "authPolicy": map[string]any{"context": map[string]any{"a": "b"}}}, authRequiredMsg},

		// defaults and overrides (GEP-713).
		{"auth overrides", authOverrides, "spec.overrides.responseTimeout", "1s", ""},
		{"auth overrides opting out", authOptOut, "spec", map[string]any{"targetRefs": []any{target("Gateway", "g")}, "overrides": map[string]any{"disabled": true}}, ""},
		{"auth defaults", authOptOut, "spec", map[string]any{"targetRefs": []any{target("Gateway", "g")}, "defaults": map[string]any{"extensionRef": ref}}, ""},
		{"auth overrides and flat settings", auth, "spec.overrides", map[string]any{"extensionRef": ref}, onceMsg},
		{"auth overrides and the flat opt-out", authOptOut, "spec.overrides", map[string]any{"extensionRef": ref}, onceMsg},
		{"auth defaults and overrides", authOverrides, "spec.defaults", map[string]any{"extensionRef": ref}, onceMsg},
		{"auth overrides without extensionRef", authOverrides, "spec.overrides.extensionRef", nil, authRequiredMsg},
		{"auth overrides disabled with extensionRef", authOverrides, "spec.overrides.disabled", true, authAloneMsg},
		{"auth overrides timeout not a duration", authOverrides, "spec.overrides.responseTimeout", "soon", "spec.overrides.responseTimeout"},
		{"proc defaults", procDefaults, "spec.defaults.processor.processingMode", map[string]any{"requestBodyMode": "BUFFERED"}, ""},
		{"proc defaults and overrides", procDefaults, "spec.overrides", map[string]any{"disabled": true}, onceMsg},
		{"proc defaults and flat processor", proc, "spec.defaults", map[string]any{"disabled": true}, onceMsg},
		{"proc defaults without extensionRef", procDefaults, "spec.defaults.processor.grpcService.extensionRef", nil, procServiceMsg},
		{"proc overrides disabled with processor", procDefaults, "spec.defaults.disabled", true, procAloneMsg},
		{"proc empty overrides", proc, "spec", map[string]any{"targetRefs": []any{target("Gateway", "g")}, "overrides": map[string]any{}}, procRequiredMsg},

		// ExtProcPolicy.
		{"proc without processor", proc, "spec.processor", nil, procRequiredMsg},
		{"proc disabled false without processor", procOptOut, "spec.disabled", false, procRequiredMsg},
		{"proc without grpcService", proc, "spec.processor.grpcService", nil, procServiceMsg},
		{"proc without extensionRef", proc, "spec.processor.grpcService.extensionRef", nil, procServiceMsg},
		{"proc extensionRef without name", proc, "spec.processor.grpcService.extensionRef.name", nil, "spec.processor.grpcService.extensionRef.name"},
		{"proc timeout not a duration", proc, "spec.processor.grpcService.responseTimeout", "5 seconds", "spec.processor.grpcService.responseTimeout"},
		{"proc header mode unknown", proc, "spec.processor.processingMode.requestHeaderMode", "ALWAYS", "spec.processor.processingMode.requestHeaderMode"},
		{"proc body mode unknown", proc, "spec.processor.processingMode.responseBodyMode", "ALL", "spec.processor.processingMode.responseBodyMode"},
		{"proc disabled with processor", proc, "spec.disabled", true, procAloneMsg},
		{"proc opt-out with processor", procOptOut, "spec.processor", map[string]any{"grpcService": map[string]any{"extensionRef": map[string]any{"name": "p"}}}, procAloneMsg},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := deepCopyJSON(t, tc.base)
			set(t, obj, tc.path, tc.value)
			errs := schemaFor(t, all, obj).validate(obj)
			switch {
			case tc.want == "" && len(errs) > 0:
				t.Errorf("rejected %s=%v: %v", tc.path, tc.value, errs.ToAggregate())
			case tc.want != "" && len(errs) == 0:
				t.Errorf("accepted %s=%v", tc.path, tc.value)
			case tc.want != "" && !strings.Contains(errs.ToAggregate().Error(), tc.want):
				t.Errorf("errors do not mention %q: %v", tc.want, errs.ToAggregate())
			}
		})
	}
}

// TestPolicySettingsAreTheHTTPProxys checks that the policies' settings
// are validated exactly as an HTTPProxy's (descriptions aside): the same
// types, patterns, enums, defaults and required fields. And both kinds
// attach the same way.
func TestPolicySettingsAreTheHTTPProxys(t *testing.T) {
	crds := loadCRDs(t)
	root := func(kind string) *apiextensionsv1.JSONSchemaProps {
		crd, ok := crds[kind]
		if !ok {
			t.Fatalf("no CRD for %s", kind)
		}
		return crd.Spec.Versions[0].Schema.OpenAPIV3Schema
	}
	at := func(kind, path string) apiextensionsv1.JSONSchemaProps {
		s := root(kind)
		for _, p := range strings.Split(path, ".") {
			child, ok := s.Properties[p]
			if !ok {
				t.Fatalf("%s: no %s in the schema", kind, path)
			}
			s = &child
		}
		return *s
	}
	for _, tc := range []struct{ kind, path, httpProxyPath string }{
		{"ExtAuthPolicy", "spec.extensionRef", "spec.virtualhost.authorization.extensionRef"},
		{"ExtAuthPolicy", "spec.authPolicy", "spec.virtualhost.authorization.authPolicy"},
		{"ExtAuthPolicy", "spec.responseTimeout", "spec.virtualhost.authorization.responseTimeout"},
		{"ExtAuthPolicy", "spec.failOpen", "spec.virtualhost.authorization.failOpen"},
		{"ExtAuthPolicy", "spec.withRequestBody", "spec.virtualhost.authorization.withRequestBody"},
		{"ExtProcPolicy", "spec.processor", "spec.virtualhost.extProc.processor"},
	} {
		got, want := withoutDescriptions(t, at(tc.kind, tc.path)), withoutDescriptions(t, at("HTTPProxy", tc.httpProxyPath))
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s %s is not validated as HTTPProxy %s:\n got %v\nwant %v", tc.kind, tc.path, tc.httpProxyPath, got, want)
		}
	}
	for _, path := range []string{"spec.targetRefs", "spec.disabled", "status"} {
		if a, p := at("ExtAuthPolicy", path), at("ExtProcPolicy", path); !reflect.DeepEqual(withoutDescriptions(t, a), withoutDescriptions(t, p)) {
			t.Errorf("%s differs between ExtAuthPolicy and ExtProcPolicy", path)
		}
	}
}

// withoutDescriptions is a schema as JSON, its descriptions removed.
func withoutDescriptions(t *testing.T, s apiextensionsv1.JSONSchemaProps) any {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	var strip func(any)
	strip = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			delete(v, "description")
			for _, x := range v {
				strip(x)
			}
		case []any:
			for _, x := range v {
				strip(x)
			}
		}
	}
	strip(out)
	return out
}

// TestPolicySamples decodes the policy samples into the Go types and reads
// them back as an HTTPProxy's settings.
func TestPolicySamples(t *testing.T) {
	docs := readDocs(t, "gateway-api-policies.yaml")
	if len(docs) != 6 {
		t.Fatalf("got %d documents", len(docs))
	}
	var auth, authRoute, authOptOut, authEnforced gatewayv1alpha1.ExtAuthPolicy
	var proc, procOptOut gatewayv1alpha1.ExtProcPolicy
	for i, obj := range []any{&auth, &authRoute, &authOptOut, &proc, &procOptOut, &authEnforced} {
		if errs := decodeStrict(t, docs[i], obj); len(errs) > 0 {
			t.Fatalf("document %d: %v", i, errs)
		}
	}

	if r := auth.Spec.TargetRefs; len(r) != 1 || r[0].Group != "gateway.networking.k8s.io" || r[0].Kind != "Gateway" || r[0].Name != "public" || r[0].SectionName != nil {
		t.Errorf("gateway-auth targetRefs = %+v", r)
	}
	a := auth.Spec.AuthorizationServer()
	if a == nil || a.ExtensionServiceRef != (contourv1.ExtensionServiceReference{Name: "authserver", Namespace: "auth"}) || a.ResponseTimeout != "500ms" || a.FailOpen ||
		a.WithRequestBody == nil || a.WithRequestBody.MaxRequestBytes != 4096 || !a.WithRequestBody.AllowPartialMessage ||
		a.AuthPolicy == nil || a.AuthPolicy.Disabled || a.AuthPolicy.Context["gateway"] != "public" || a.GlobalExternalAuthorizationDisabled {
		t.Errorf("gateway-auth as an HTTPProxy's authorization = %+v", a)
	}
	// A copy: changing it leaves the policy alone.
	a.AuthPolicy.Context["gateway"] = "x"
	a.WithRequestBody.MaxRequestBytes = 1
	if auth.Spec.AuthPolicy.Context["gateway"] != "public" || auth.Spec.WithRequestBody.MaxRequestBytes != 4096 {
		t.Error("AuthorizationServer shares memory with the policy")
	}

	if r := authRoute.Spec.TargetRefs; len(r) != 2 || r[0].Kind != "HTTPRoute" || r[1].Kind != "GRPCRoute" || r[1].Name != "orders" {
		t.Errorf("shop-auth targetRefs = %+v", r)
	}

	if s := authOptOut.Spec; !s.Disabled || s.ExtensionServiceRef != nil || s.AuthorizationServer() != nil ||
		len(s.TargetRefs) != 1 || s.TargetRefs[0].SectionName == nil || *s.TargetRefs[0].SectionName != "health" {
		t.Errorf("shop-health-no-auth spec = %+v", s)
	}

	p := proc.Spec.ExternalProcessor()
	if p.Disabled || p.Processor == nil || p.Processor.GRPCService == nil ||
		p.Processor.GRPCService.ExtensionServiceRef != (contourv1.ExtensionServiceReference{Name: "extprocserver", Namespace: "processing"}) ||
		p.Processor.GRPCService.ResponseTimeout != "1s" || !p.Processor.GRPCService.FailOpen || !p.Processor.AllowModeOverride ||
		p.Processor.MutationRules == nil || !p.Processor.MutationRules.DisallowSystem {
		t.Fatalf("shop-processing as an HTTPProxy's extProc = %+v", p)
	}
	if m := p.Processor.ProcessingMode; m == nil || m.RequestHeaderMode != contourv1.ProcessingModeSend || m.ResponseHeaderMode != contourv1.ProcessingModeSkip ||
		m.RequestBodyMode != contourv1.ProcessingModeBuffered || m.ResponseBodyMode != "" {
		t.Errorf("shop-processing processingMode = %+v", m)
	}
	p.Processor.GRPCService.ResponseTimeout = "2s"
	if proc.Spec.Processor.GRPCService.ResponseTimeout != "1s" {
		t.Error("ExternalProcessor shares memory with the policy")
	}
	if r := proc.Spec.TargetRefs; len(r) != 3 || r[2].Kind != "Gateway" || r[2].SectionName == nil || *r[2].SectionName != "https" {
		t.Errorf("shop-processing targetRefs = %+v", r)
	}

	if p := procOptOut.Spec.ExternalProcessor(); !p.Disabled || p.Processor != nil {
		t.Errorf("internal-no-processing as an HTTPProxy's extProc = %+v", p)
	}

	// The flat settings are defaults; overrides say so.
	if _, override := auth.Spec.Settings(); override {
		t.Error("gateway-auth: settings at the top of spec are overrides, want defaults")
	}
	settings, override := authEnforced.Spec.Settings()
	if a := authEnforced.Spec.AuthorizationServer(); !override || settings.ExtensionServiceRef == nil || a == nil ||
		a.ExtensionServiceRef != (contourv1.ExtensionServiceReference{Name: "authserver", Namespace: "auth"}) || a.AuthPolicy.Context["gateway"] != "public" {
		t.Errorf("public-auth-enforced: overrides %v, as an HTTPProxy's authorization %+v", override, a)
	}
}

// TestPolicyDefaults checks the defaults the API server fills in: those of
// the HTTPProxy types.
func TestPolicyDefaults(t *testing.T) {
	obj, s := decodeWithSchema(t, `
apiVersion: gateway.portcullis.dev/v1alpha1
kind: ExtProcPolicy
metadata: {name: p, namespace: ns}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: g}]
  processor:
    grpcService: {extensionRef: {name: e}}
    processingMode: {requestBodyMode: STREAMED}
`)
	defaulting.Default(obj, s.structural)
	if errs := s.validate(obj); len(errs) > 0 {
		t.Fatalf("invalid after defaulting: %v", errs.ToAggregate())
	}
	var p gatewayv1alpha1.ExtProcPolicy
	remarshal(t, obj, &p)
	want := contourv1.ProcessingMode{
		RequestHeaderMode:   contourv1.ProcessingModeSend,
		ResponseHeaderMode:  contourv1.ProcessingModeSend,
		RequestBodyMode:     contourv1.ProcessingModeStreamed, // as given
		ResponseBodyMode:    contourv1.ProcessingModeNone,
		RequestTrailerMode:  contourv1.ProcessingModeSkip,
		ResponseTrailerMode: contourv1.ProcessingModeSkip,
	}
	if got := *p.Spec.Processor.ProcessingMode; got != want {
		t.Errorf("processingMode defaulted to %+v, want %+v", got, want)
	}

	obj, s = decodeWithSchema(t, `
apiVersion: gateway.portcullis.dev/v1alpha1
kind: ExtAuthPolicy
metadata: {name: a, namespace: ns}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: r}]
  extensionRef: {name: e}
  withRequestBody: {}
`)
	defaulting.Default(obj, s.structural)
	if errs := s.validate(obj); len(errs) > 0 {
		t.Fatalf("invalid after defaulting: %v", errs.ToAggregate())
	}
	var a gatewayv1alpha1.ExtAuthPolicy
	remarshal(t, obj, &a)
	if got := a.Spec.WithRequestBody.MaxRequestBytes; got != 1024 {
		t.Errorf("maxRequestBytes defaulted to %d, want 1024", got)
	}
}

// TestPolicyPage checks docs/gateway-api-policies.md against the samples
// and the CRDs: its examples are the samples (validated above), and its
// table of refusals gives every CEL message of the policies' CRDs.
func TestPolicyPage(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "gateway-api-policies.md"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)

	var samples []any
	for _, doc := range readDocs(t, "gateway-api-policies.yaml") {
		var obj any
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			t.Fatal(err)
		}
		samples = append(samples, obj)
	}
	shown := make([]bool, len(samples))
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(page, -1)
	for _, m := range blocks {
		var obj any
		if err := yaml.Unmarshal([]byte(m[1]), &obj); err != nil {
			t.Fatalf("example does not parse: %v\n%s", err, m[1])
		}
		i := slices.IndexFunc(samples, func(s any) bool { return reflect.DeepEqual(s, obj) })
		if i < 0 {
			t.Errorf("example is not one of apis/testdata/spec/gateway-api-policies.yaml:\n%s", m[1])
			continue
		}
		shown[i] = true
	}
	for i, ok := range shown {
		if !ok {
			t.Errorf("sample %d of gateway-api-policies.yaml is not an example of the page", i)
		}
	}

	crds := loadCRDs(t)
	for _, kind := range []string{"ExtAuthPolicy", "ExtProcPolicy"} {
		var walk func(s *apiextensionsv1.JSONSchemaProps)
		walk = func(s *apiextensionsv1.JSONSchemaProps) {
			for _, v := range s.XValidations {
				if !strings.Contains(page, "`"+v.Message+"`") {
					t.Errorf("%s: the page does not give the message %q", kind, v.Message)
				}
			}
			for _, p := range s.Properties {
				walk(&p)
			}
			if s.Items != nil && s.Items.Schema != nil {
				walk(s.Items.Schema)
			}
		}
		spec := crds[kind].Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
		if len(spec.XValidations) == 0 {
			t.Errorf("%s: no CEL rules on spec", kind)
		}
		walk(&spec)
	}
}
