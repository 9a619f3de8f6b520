package apis_test

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	contourv1alpha1 "github.com/portcullis/portcullis/apis/projectcontour/v1alpha1"
)

// decodeSamples strictly decodes every document of a testdata/spec file into
// its Go type; unknown fields are errors.
func decodeSamples(t *testing.T, name string) (proxies []contourv1.HTTPProxy, services []contourv1alpha1.ExtensionService) {
	t.Helper()
	for _, doc := range readDocs(t, name) {
		switch tm := kindOf(t, doc); tm.APIVersion + "/" + tm.Kind {
		case "projectcontour.io/v1/HTTPProxy":
			var p contourv1.HTTPProxy
			if errs := decodeStrict(t, doc, &p); errs != nil {
				t.Fatalf("%s: HTTPProxy: %v", name, errs)
			}
			proxies = append(proxies, p)
		case "projectcontour.io/v1alpha1/ExtensionService":
			var s contourv1alpha1.ExtensionService
			if errs := decodeStrict(t, doc, &s); errs != nil {
				t.Fatalf("%s: ExtensionService: %v", name, errs)
			}
			services = append(services, s)
		default:
			t.Fatalf("%s: unexpected object %s %s", name, tm.APIVersion, tm.Kind)
		}
	}
	return proxies, services
}

func TestExternalAuthorizationSample(t *testing.T) {
	proxies, services := decodeSamples(t, "external-authorization.yaml")
	if len(proxies) != 1 || len(services) != 1 {
		t.Fatalf("got %d HTTPProxies and %d ExtensionServices", len(proxies), len(services))
	}

	es := services[0]
	if es.Name != "testserver" || es.Namespace != "contour-auth" {
		t.Errorf("ExtensionService = %s/%s", es.Namespace, es.Name)
	}
	if len(es.Spec.Services) != 1 || es.Spec.Services[0] != (contourv1alpha1.ExtensionServiceTarget{Name: "testserver", Port: 9443}) {
		t.Errorf("services = %+v", es.Spec.Services)
	}
	if v := es.Spec.UpstreamValidation; v == nil || v.CACertificate != "testserver" || v.SubjectName != "testserver.auth.projectcontour.io" {
		t.Errorf("validation = %+v", v)
	}

	vh := proxies[0].Spec.VirtualHost
	if vh == nil || vh.Fqdn != "echo.projectcontour.io" || vh.TLS == nil || vh.TLS.SecretName != "echo" {
		t.Fatalf("virtualhost = %+v", vh)
	}
	auth := vh.Authorization
	if auth == nil {
		t.Fatal("no authorization")
	}
	wantRef := contourv1.ExtensionServiceReference{APIVersion: "projectcontour.io/v1alpha1", Kind: "ExtensionService", Name: "testserver", Namespace: "contour-auth"}
	if auth.ExtensionServiceRef != wantRef {
		t.Errorf("extensionRef = %+v", auth.ExtensionServiceRef)
	}
	if auth.ResponseTimeout != "500ms" || auth.FailOpen || auth.GlobalExternalAuthorizationDisabled {
		t.Errorf("authorization = %+v", auth)
	}
	if p := auth.AuthPolicy; p == nil || p.Disabled || p.Context["key1"] != "value1" || p.Context["key2"] != "value2" || len(p.Context) != 2 {
		t.Errorf("authPolicy = %+v", p)
	}
	if r := proxies[0].Spec.Routes; len(r) != 1 || len(r[0].Services) != 1 || r[0].Services[0].Name != "echo" || r[0].Services[0].Port != 80 {
		t.Errorf("routes = %+v", r)
	}
}

// The external-authorization sample as first drafted has three fields at the
// wrong level (docs/design/decisions.md). A strict decode names them; a
// lenient one (what an API server does, after pruning) loses them silently.
func TestExternalAuthorizationSampleVerbatim(t *testing.T) {
	docs := readDocs(t, "external-authorization.verbatim.yaml")
	if len(docs) != 2 {
		t.Fatalf("got %d documents", len(docs))
	}

	var es contourv1alpha1.ExtensionService
	assertUnknownFields(t, decodeStrict(t, docs[0], &es), "spec.services[0].validation")
	if es.Spec.UpstreamValidation != nil || es.Spec.Services[0].Name != "testserver" {
		t.Errorf("lenient decode: spec = %+v", es.Spec)
	}

	var p contourv1.HTTPProxy
	assertUnknownFields(t, decodeStrict(t, docs[1], &p), "spec.virtualhost.timeout", "spec.virtualhost.authPolicy")
	if a := p.Spec.VirtualHost.Authorization; a.ExtensionServiceRef.Name != "testserver" || a.AuthPolicy != nil || a.ResponseTimeout != "" {
		t.Errorf("lenient decode: authorization = %+v", a)
	}
}

// assertUnknownFields checks that the strict decoding errors are exactly
// unknown fields at the given paths.
func assertUnknownFields(t *testing.T, errs []error, paths ...string) {
	t.Helper()
	var got []string
	for _, err := range errs {
		got = append(got, err.Error())
	}
	var want []string
	for _, p := range paths {
		want = append(want, fmt.Sprintf("unknown field %q", p))
	}
	sort.Strings(got)
	sort.Strings(want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("strict decoding errors = %q, want %q", got, want)
	}
}

func TestGlobalExtAuthSamples(t *testing.T) {
	proxies, _ := decodeSamples(t, "global-ext-auth-vhost-opt-out.yaml")
	if len(proxies) != 1 {
		t.Fatalf("got %d HTTPProxies", len(proxies))
	}
	auth := proxies[0].Spec.VirtualHost.Authorization
	if auth == nil || !auth.GlobalExternalAuthorizationDisabled {
		t.Errorf("authorization = %+v, want globalExtAuthDisabled", auth)
	}
	if auth != nil && auth.ExtensionServiceRef != (contourv1.ExtensionServiceReference{}) {
		t.Errorf("extensionRef = %+v, want empty", auth.ExtensionServiceRef)
	}
	if r := proxies[0].Spec.Routes; len(r) != 2 || r[1].Conditions[0].Prefix != "/subpage" {
		t.Errorf("routes = %+v", r)
	}

	proxies, _ = decodeSamples(t, "global-ext-auth-route-opt-out.yaml")
	if len(proxies) != 1 {
		t.Fatalf("got %d HTTPProxies", len(proxies))
	}
	if a := proxies[0].Spec.VirtualHost.Authorization; a != nil {
		t.Errorf("authorization = %+v, want none", a)
	}
	routes := proxies[0].Spec.Routes
	if len(routes) != 2 {
		t.Fatalf("got %d routes", len(routes))
	}
	for i, want := range []contourv1.AuthorizationPolicy{
		{Disabled: false, Context: map[string]string{"route": "apex"}},
		{Disabled: true, Context: map[string]string{"route": "subpage"}},
	} {
		got := routes[i].AuthPolicy
		if got == nil || got.Disabled != want.Disabled || len(got.Context) != 1 || got.Context["route"] != want.Context["route"] {
			t.Errorf("route %d authPolicy = %+v, want %+v", i, got, want)
		}
	}
}

// The drafted "virtual host opted out" sample repeats keys in one route. A
// strict YAML decode refuses it; a lenient one keeps the last value, so the
// "/" route is lost.
func TestGlobalExtAuthVhostOptOutVerbatimHasDuplicateKeys(t *testing.T) {
	docs := readDocs(t, "global-ext-auth-vhost-opt-out.verbatim.yaml")
	var p contourv1.HTTPProxy
	err := yaml.UnmarshalStrict(docs[0], &p)
	if err == nil || !strings.Contains(err.Error(), `key "conditions" already set`) || !strings.Contains(err.Error(), `key "services" already set`) {
		t.Errorf("strict decode error = %v, want duplicate keys conditions and services", err)
	}
	p = contourv1.HTTPProxy{}
	if err := yaml.Unmarshal(docs[0], &p); err != nil {
		t.Fatal(err)
	}
	if r := p.Spec.Routes; len(r) != 1 || len(r[0].Conditions) != 1 || r[0].Conditions[0].Prefix != "/subpage" {
		t.Errorf("lenient decode: routes = %+v", r)
	}
}

func TestExternalProcessingSample(t *testing.T) {
	proxies, services := decodeSamples(t, "external-processing.yaml")
	if len(proxies) != 1 || len(services) != 2 {
		t.Fatalf("got %d HTTPProxies and %d ExtensionServices", len(proxies), len(services))
	}
	if s := services[0].Spec; s.ProtocolVersion != contourv1alpha1.SupportProtocolVersion3 || s.Protocol == nil || *s.Protocol != "h2c" {
		t.Errorf("extproc-extsvc2 spec = %+v", s)
	}
	if s := services[1].Spec; s.LoadBalancerPolicy == nil || s.LoadBalancerPolicy.Strategy != "RoundRobin" ||
		s.TimeoutPolicy == nil || s.TimeoutPolicy.Response != "30s" || s.Services[0].Weight != 1 {
		t.Errorf("extproc-extsvc3 spec = %+v", s)
	}

	vh := proxies[0].Spec.VirtualHost
	if vh == nil || vh.ExtProc == nil || vh.ExtProc.Disabled || vh.ExtProc.Processor == nil {
		t.Fatalf("virtualhost.extProc = %+v", vh)
	}
	proc := vh.ExtProc.Processor
	if g := proc.GRPCService; g == nil ||
		g.ExtensionServiceRef != (contourv1.ExtensionServiceReference{APIVersion: "projectcontour.io/v1alpha1", Name: "extproc-extsvc2", Namespace: "extproc-test"}) ||
		!g.FailOpen || g.ResponseTimeout != "60s" {
		t.Errorf("processor.grpcService = %+v", proc.GRPCService)
	}
	if proc.MutationRules == nil || proc.MutationRules.AllowAllRouting {
		t.Errorf("processor.mutationRules = %+v", proc.MutationRules)
	}
	wantMode := contourv1.ProcessingMode{
		RequestHeaderMode:   contourv1.ProcessingModeSend,
		ResponseHeaderMode:  contourv1.ProcessingModeSend,
		RequestBodyMode:     contourv1.ProcessingModeNone,
		ResponseBodyMode:    contourv1.ProcessingModeNone,
		RequestTrailerMode:  contourv1.ProcessingModeSkip,
		ResponseTrailerMode: contourv1.ProcessingModeSkip,
	}
	if proc.ProcessingMode == nil || *proc.ProcessingMode != wantMode {
		t.Errorf("processor.processingMode = %+v", proc.ProcessingMode)
	}

	routes := proxies[0].Spec.Routes
	if len(routes) != 3 {
		t.Fatalf("got %d routes", len(routes))
	}
	// /disabled
	if p := routes[0].ExtProcPolicy; p == nil || !p.Disabled || p.Overrides != nil || routes[0].Conditions[0].Prefix != "/disabled" {
		t.Errorf("/disabled extProcPolicy = %+v", p)
	}
	// /override
	p := routes[1].ExtProcPolicy
	if p == nil || p.Disabled || p.Overrides == nil || p.Overrides.GRPCService == nil {
		t.Fatalf("/override extProcPolicy = %+v", p)
	}
	if g := p.Overrides.GRPCService; g.ExtensionServiceRef.Name != "extproc-extsvc3" || g.ResponseTimeout != "31s" || !g.FailOpen {
		t.Errorf("/override grpcService = %+v", g)
	}
	if m := p.Overrides.ProcessingMode; m == nil || m.RequestHeaderMode != contourv1.ProcessingModeSkip || m.ResponseHeaderMode != contourv1.ProcessingModeSend {
		t.Errorf("/override processingMode = %+v", m)
	}
	if p.Overrides.MutationRules != nil {
		t.Errorf("/override mutationRules = %+v, want none", p.Overrides.MutationRules)
	}
	// /inherit
	if routes[2].ExtProcPolicy != nil || routes[2].Conditions[0].Prefix != "/inherit" {
		t.Errorf("/inherit route = %+v", routes[2])
	}
}

// The drafted external-processing virtual host sample puts `namespace`
// under grpcService; strict decoding catches it, lenient decoding drops it.
func TestExternalProcessingVhostSampleVerbatim(t *testing.T) {
	docs := readDocs(t, "external-processing-vhost.verbatim.yaml")
	var p contourv1.HTTPProxy
	assertUnknownFields(t, decodeStrict(t, docs[0], &p), "spec.virtualhost.extProc.processor.grpcService.namespace")
	ep := p.Spec.VirtualHost.ExtProc
	if !ep.Disabled || ep.Processor == nil || ep.Processor.GRPCService.ExtensionServiceRef.Name != "extproc-extsvc2" ||
		ep.Processor.GRPCService.ExtensionServiceRef.Namespace != "" {
		t.Errorf("extProc = %+v", ep)
	}
}

func TestStatusConditionSamples(t *testing.T) {
	proxies, _ := decodeSamples(t, "status-conditions.yaml")
	if len(proxies) != 2 {
		t.Fatalf("got %d HTTPProxies", len(proxies))
	}

	invalid := proxies[0].Status
	if invalid.CurrentStatus != contourv1.StatusInvalid {
		t.Errorf("currentStatus = %q", invalid.CurrentStatus)
	}
	valid := invalid.GetCondition(contourv1.ValidConditionType)
	if valid == nil || valid.Status != metav1.ConditionFalse || valid.Reason != "MultipleReasons" || valid.ObservedGeneration != 1 {
		t.Fatalf("Valid = %+v", valid)
	}
	if len(valid.Errors) != 2 || valid.Errors[0].Type != contourv1.ConditionTypeServiceError || valid.Errors[1].Type != contourv1.ConditionTypeTLSError ||
		valid.Errors[1].Status != metav1.ConditionTrue || valid.Errors[1].Reason != "TLSSecretNotFound" {
		t.Errorf("errors = %+v", valid.Errors)
	}

	warned := proxies[1].Status.GetCondition(contourv1.ValidConditionType)
	if warned == nil || warned.Status != metav1.ConditionTrue || len(warned.Errors) != 0 || len(warned.Warnings) != 1 ||
		warned.Warnings[0].Reason != "NoEndpoints" {
		t.Errorf("Valid = %+v", warned)
	}
}
