package apis_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	schemavalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"

	gatewayv1alpha1 "github.com/portcullis/portcullis/apis/gateway/v1alpha1"
	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	contourv1alpha1 "github.com/portcullis/portcullis/apis/projectcontour/v1alpha1"
)

// crdSchema is the schema of one served version of a CRD, ready to validate,
// prune and default objects the way the API server does.
type crdSchema struct {
	validator  schemavalidation.SchemaValidator
	structural *structuralschema.Structural
	cel        *cel.Validator // nil when the schema has no CEL rules
}

// validate returns the validation errors the API server would report for
// obj (a decoded JSON object): OpenAPI schema, list-set and list-map
// uniqueness, then the CEL rules (x-kubernetes-validations).
func (s crdSchema) validate(obj map[string]any) field.ErrorList {
	errs := schemavalidation.ValidateCustomResource(nil, obj, s.validator)
	errs = append(errs, listtype.ValidateListSetsAndMaps(nil, s.structural, obj)...)
	if s.cel != nil {
		celErrs, _ := s.cel.Validate(context.Background(), nil, s.structural, obj, nil, celconfig.RuntimeCELCostBudget)
		errs = append(errs, celErrs...)
	}
	return errs
}

// prune removes the fields the schema does not know and returns their paths.
func (s crdSchema) prune(obj map[string]any) []string {
	return pruning.PruneWithOptions(obj, s.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
}

// loadCRDs reads apis/crds/*.yaml, strictly, into CustomResourceDefinitions.
func loadCRDs(t *testing.T) map[string]*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("crds", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in apis/crds (%v)", err)
	}
	crds := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(b, crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		crds[crd.Spec.Names.Kind] = crd
	}
	return crds
}

// schemas returns the schema of every kind, keyed "apiVersion/kind".
func schemas(t *testing.T) map[string]crdSchema {
	t.Helper()
	out := map[string]crdSchema{}
	for kind, crd := range loadCRDs(t) {
		for _, v := range crd.Spec.Versions {
			internal := &apiextensions.JSONSchemaProps{}
			if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, internal, nil); err != nil {
				t.Fatal(err)
			}
			validator, _, err := schemavalidation.NewSchemaValidator(internal)
			if err != nil {
				t.Fatalf("%s %s: %v", kind, v.Name, err)
			}
			structural, err := structuralschema.NewStructural(internal)
			if err != nil {
				t.Fatalf("%s %s: %v", kind, v.Name, err)
			}
			out[crd.Spec.Group+"/"+v.Name+"/"+kind] = crdSchema{
				validator: validator, structural: structural,
				cel: cel.NewValidator(structural, true, celconfig.PerCallLimit),
			}
		}
	}
	return out
}

// TestCRDsAreAcceptedByTheAPIServer runs the validation the API server runs
// when the CRDs are created: names, structural schema, defaults, list types,
// printer column paths.
func TestCRDsAreAcceptedByTheAPIServer(t *testing.T) {
	for kind, crd := range loadCRDs(t) {
		internal := &apiextensions.CustomResourceDefinition{}
		if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(crd, internal, nil); err != nil {
			t.Fatal(err)
		}
		// The API server records the storage version on create.
		for _, v := range internal.Spec.Versions {
			if v.Storage {
				internal.Status.StoredVersions = []string{v.Name}
			}
		}
		if errs := crdvalidation.ValidateCustomResourceDefinition(context.Background(), internal); len(errs) > 0 {
			t.Errorf("%s: the API server would reject the CRD:\n%v", kind, errs.ToAggregate())
		}
	}
}

func TestCRDNamesAndColumns(t *testing.T) {
	type column struct{ name, typ, path string }
	// The policies show their first target and their first ancestor's
	// Accepted condition; kubectl get -o yaml shows them all.
	policyColumns := []column{
		{"Target Kind", "string", ".spec.targetRefs[0].kind"},
		{"Target Name", "string", ".spec.targetRefs[0].name"},
		{"Disabled", "boolean", ".spec.disabled"},
		{"Accepted", "string", `.status.ancestors[0].conditions[?(@.type=="Accepted")].status`},
		{"Age", "date", ".metadata.creationTimestamp"},
	}
	const contour, portcullis = "projectcontour.io", "gateway.portcullis.dev"
	// Policies of the Gateway API's policy attachment carry this label;
	// ours reach beyond their targets (a Gateway's policy applies to its
	// routes), so they are "Inherited".
	policyLabels := map[string]string{"gateway.networking.k8s.io/policy": "Inherited"}
	want := map[string]struct {
		group            string
		plural, singular string
		shortNames       []string
		categories       []string
		labels           map[string]string
		version          string
		columns          []column
	}{
		"HTTPProxy": {
			group: contour, plural: "httpproxies", singular: "httpproxy", shortNames: []string{"proxy", "proxies"}, version: "v1",
			columns: []column{
				{"FQDN", "string", ".spec.virtualhost.fqdn"},
				{"TLS Secret", "string", ".spec.virtualhost.tls.secretName"},
				{"Status", "string", ".status.currentStatus"},
				{"Status Description", "string", ".status.description"},
				{"Age", "date", ".metadata.creationTimestamp"},
			},
		},
		"TLSCertificateDelegation": {
			group: contour, plural: "tlscertificatedelegations", singular: "tlscertificatedelegation", shortNames: []string{"tlscerts"}, version: "v1",
		},
		"ExtensionService": {
			group: contour, plural: "extensionservices", singular: "extensionservice", shortNames: []string{"extensionservice", "extensionservices"}, version: "v1alpha1",
			columns: []column{
				{"Ready", "string", `.status.conditions[?(@.type=="Ready")].status`},
				{"Valid", "string", `.status.conditions[?(@.type=="Valid")].status`},
				{"Cluster", "string", ".status.clusterName"},
				{"Age", "date", ".metadata.creationTimestamp"},
			},
		},
		"ExtAuthPolicy": {
			group: portcullis, plural: "extauthpolicies", singular: "extauthpolicy", shortNames: []string{"eap"}, version: "v1alpha1",
			categories: []string{"portcullis"}, labels: policyLabels, columns: policyColumns,
		},
		"ExtProcPolicy": {
			group: portcullis, plural: "extprocpolicies", singular: "extprocpolicy", shortNames: []string{"epp"}, version: "v1alpha1",
			categories: []string{"portcullis"}, labels: policyLabels, columns: policyColumns,
		},
	}

	crds := loadCRDs(t)
	if len(crds) != len(want) {
		t.Errorf("got CRDs for %d kinds, want %d", len(crds), len(want))
	}
	for kind, w := range want {
		crd, ok := crds[kind]
		if !ok {
			t.Errorf("no CRD for %s", kind)
			continue
		}
		if crd.Name != w.plural+"."+w.group || crd.Spec.Group != w.group || crd.Spec.Scope != apiextensionsv1.NamespaceScoped {
			t.Errorf("%s: name %s, group %s, scope %s", kind, crd.Name, crd.Spec.Group, crd.Spec.Scope)
		}
		if !reflect.DeepEqual(crd.Labels, w.labels) {
			t.Errorf("%s: labels %v, want %v", kind, crd.Labels, w.labels)
		}
		n := crd.Spec.Names
		if n.Plural != w.plural || n.Singular != w.singular || n.ListKind != kind+"List" || !reflect.DeepEqual(n.ShortNames, w.shortNames) ||
			!reflect.DeepEqual(n.Categories, w.categories) {
			t.Errorf("%s: names = %+v", kind, n)
		}
		if len(crd.Spec.Versions) != 1 {
			t.Errorf("%s: %d versions", kind, len(crd.Spec.Versions))
			continue
		}
		v := crd.Spec.Versions[0]
		if v.Name != w.version || !v.Served || !v.Storage {
			t.Errorf("%s: version %s served=%v storage=%v", kind, v.Name, v.Served, v.Storage)
		}
		if v.Subresources == nil || v.Subresources.Status == nil {
			t.Errorf("%s: no status subresource", kind)
		}
		var got []column
		for _, c := range v.AdditionalPrinterColumns {
			got = append(got, column{c.Name, c.Type, c.JSONPath})
		}
		if !reflect.DeepEqual(got, w.columns) {
			t.Errorf("%s: printer columns\n got %q\nwant %q", kind, got, w.columns)
		}
	}
}

// sampleObjects returns every document of the corrected design samples
// (testdata/spec, see docs/design/README.md) as a JSON object, keyed
// "<file>#<index>".
func sampleObjects(t *testing.T) map[string]map[string]any {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join("testdata", "spec", "*.yaml"))
	out := map[string]map[string]any{}
	for _, f := range files {
		if strings.HasSuffix(f, ".verbatim.yaml") {
			continue
		}
		for i, doc := range readDocs(t, filepath.Base(f)) {
			var obj map[string]any
			if err := yaml.Unmarshal(doc, &obj); err != nil {
				t.Fatal(err)
			}
			out[filepath.Base(f)+"#"+string(rune('0'+i))] = obj
		}
	}
	if len(out) == 0 {
		t.Fatal("no samples")
	}
	return out
}

func schemaFor(t *testing.T, all map[string]crdSchema, obj map[string]any) crdSchema {
	t.Helper()
	s, ok := all[obj["apiVersion"].(string)+"/"+obj["kind"].(string)]
	if !ok {
		t.Fatalf("no CRD for %v %v", obj["apiVersion"], obj["kind"])
	}
	return s
}

// TestSamplesMatchCRDSchemas validates the corrected design samples against
// the CRD schemas, both as written and after a round trip through the Go
// types; neither may lose a field to pruning.
func TestSamplesMatchCRDSchemas(t *testing.T) {
	all := schemas(t)
	for name, obj := range sampleObjects(t) {
		s := schemaFor(t, all, obj)
		if errs := s.validate(obj); len(errs) > 0 {
			t.Errorf("%s: invalid: %v", name, errs.ToAggregate())
		}
		if pruned := s.prune(deepCopyJSON(t, obj)); len(pruned) > 0 {
			t.Errorf("%s: fields unknown to the schema: %v", name, pruned)
		}

		// Through the Go types and back: what a controller writes.
		var typed any
		switch obj["kind"] {
		case "HTTPProxy":
			typed = &contourv1.HTTPProxy{}
		case "ExtensionService":
			typed = &contourv1alpha1.ExtensionService{}
		case "ExtAuthPolicy":
			typed = &gatewayv1alpha1.ExtAuthPolicy{}
		case "ExtProcPolicy":
			typed = &gatewayv1alpha1.ExtProcPolicy{}
		default:
			t.Fatalf("%s: no Go type for kind %v", name, obj["kind"])
		}
		roundTrip := map[string]any{}
		remarshal(t, obj, typed)
		remarshal(t, typed, &roundTrip)
		if errs := s.validate(roundTrip); len(errs) > 0 {
			t.Errorf("%s: invalid after a round trip through the Go types: %v", name, errs.ToAggregate())
		}
		if pruned := s.prune(roundTrip); len(pruned) > 0 {
			t.Errorf("%s: Go types write fields unknown to the schema: %v", name, pruned)
		}
	}
}

// TestVerbatimSamplesLoseFieldsToPruning shows what an API server would do
// with the design samples as first drafted: drop the misplaced fields.
func TestVerbatimSamplesLoseFieldsToPruning(t *testing.T) {
	all := schemas(t)
	for _, tc := range []struct {
		file   string
		doc    int
		pruned []string
	}{
		{"external-authorization.verbatim.yaml", 0, []string{"spec.services[0].validation"}},
		{"external-authorization.verbatim.yaml", 1, []string{"spec.virtualhost.authPolicy", "spec.virtualhost.timeout"}},
		{"external-processing-vhost.verbatim.yaml", 0, []string{"spec.virtualhost.extProc.processor.grpcService.namespace"}},
	} {
		var obj map[string]any
		if err := yaml.Unmarshal(readDocs(t, tc.file)[tc.doc], &obj); err != nil {
			t.Fatal(err)
		}
		s := schemaFor(t, all, obj)
		if errs := s.validate(obj); len(errs) > 0 {
			t.Errorf("%s#%d: invalid: %v", tc.file, tc.doc, errs.ToAggregate())
		}
		pruned := s.prune(obj)
		sort.Strings(pruned)
		if !reflect.DeepEqual(pruned, tc.pruned) {
			t.Errorf("%s#%d: pruned %q, want %q", tc.file, tc.doc, pruned, tc.pruned)
		}
	}
}

// TestCRDDefaults checks the defaults the API server fills in.
func TestCRDDefaults(t *testing.T) {
	obj, s := decodeWithSchema(t, `
apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {name: p, namespace: ns}
spec:
  virtualhost:
    fqdn: a.example.com
    authorization:
      extensionRef: {name: auth}
      withRequestBody: {}
    extProc:
      processor:
        processingMode: {requestBodyMode: BUFFERED}
`)
	defaulting.Default(obj, s.structural)
	if errs := s.validate(obj); len(errs) > 0 {
		t.Fatalf("invalid after defaulting: %v", errs.ToAggregate())
	}
	var p contourv1.HTTPProxy
	remarshal(t, obj, &p)
	if got := p.Spec.VirtualHost.Authorization.WithRequestBody.MaxRequestBytes; got != 1024 {
		t.Errorf("maxRequestBytes defaulted to %d, want 1024", got)
	}
	want := contourv1.ProcessingMode{
		RequestHeaderMode:   contourv1.ProcessingModeSend,
		ResponseHeaderMode:  contourv1.ProcessingModeSend,
		RequestBodyMode:     contourv1.ProcessingModeBuffered, // as given
		ResponseBodyMode:    contourv1.ProcessingModeNone,
		RequestTrailerMode:  contourv1.ProcessingModeSkip,
		ResponseTrailerMode: contourv1.ProcessingModeSkip,
	}
	if got := *p.Spec.VirtualHost.ExtProc.Processor.ProcessingMode; got != want {
		t.Errorf("processingMode defaulted to %+v, want %+v", got, want)
	}
}

// TestCRDSchemasRejectInvalidObjects edits a valid object in one place and
// expects the schema to reject it at that place.
func TestCRDSchemasRejectInvalidObjects(t *testing.T) {
	all := schemas(t)
	samples := sampleObjects(t)
	proxy := samples["external-processing.yaml#2"]
	extsvc := samples["external-processing.yaml#1"]
	authProxy := samples["external-authorization.yaml#1"]
	status := samples["status-conditions.yaml#0"]
	if proxy == nil || extsvc == nil || authProxy == nil || status == nil {
		t.Fatal("sample missing")
	}

	for _, tc := range []struct {
		name    string
		base    map[string]any
		path    string // dotted path; numbers index lists
		value   any    // nil deletes
		errPath string // expected in the error
	}{
		{"fqdn missing", proxy, "spec.virtualhost.fqdn", nil, "spec.virtualhost.fqdn"},
		{"fqdn not a DNS name", proxy, "spec.virtualhost.fqdn", "Not_A.Name", "spec.virtualhost.fqdn"},
		{"service port 0", proxy, "spec.routes.0.services.0.port", 0, "spec.routes[0].services[0].port"},
		{"service port too big", proxy, "spec.routes.0.services.0.port", 65536, "spec.routes[0].services[0].port"},
		{"service name missing", proxy, "spec.routes.0.services.0.name", nil, "spec.routes[0].services[0].name"},
		{"service protocol unknown", proxy, "spec.routes.0.services.0.protocol", "http", "spec.routes[0].services[0].protocol"},
		{"service weight negative", proxy, "spec.routes.0.services.0.weight", -1, "spec.routes[0].services[0].weight"},
		{"tls version 1.1", proxy, "spec.virtualhost.tls.minimumProtocolVersion", "1.1", "spec.virtualhost.tls.minimumProtocolVersion"},
		{"tls max version 1.0", proxy, "spec.virtualhost.tls.maximumProtocolVersion", "1.0", "spec.virtualhost.tls.maximumProtocolVersion"},
		{"ext proc timeout not a duration", proxy, "spec.virtualhost.extProc.processor.grpcService.responseTimeout", "5 seconds", "spec.virtualhost.extProc.processor.grpcService.responseTimeout"},
		{"header mode unknown", proxy, "spec.virtualhost.extProc.processor.processingMode.requestHeaderMode", "ALWAYS", "spec.virtualhost.extProc.processor.processingMode.requestHeaderMode"},
		{"body mode unknown", proxy, "spec.routes.1.extProcPolicy.overrides.processingMode.responseBodyMode", "ALL", "spec.routes[1].extProcPolicy.overrides.processingMode.responseBodyMode"},
		{"extension ref without name", proxy, "spec.routes.1.extProcPolicy.overrides.grpcService.extensionRef.name", nil, "spec.routes[1].extProcPolicy.overrides.grpcService.extensionRef.name"},
		{"auth timeout not a duration", authProxy, "spec.virtualhost.authorization.responseTimeout", "soon", "spec.virtualhost.authorization.responseTimeout"},
		{"auth maxRequestBytes 0", authProxy, "spec.virtualhost.authorization.withRequestBody", map[string]any{"maxRequestBytes": 0}, "spec.virtualhost.authorization.withRequestBody.maxRequestBytes"},
		{"include without name", proxy, "spec.includes", []any{map[string]any{"namespace": "x"}}, "spec.includes[0].name"},
		{"header condition without name", proxy, "spec.routes.0.conditions.0.header", map[string]any{"present": true}, "spec.routes[0].conditions[0].header.name"},
		{"headers policy value missing", proxy, "spec.routes.0.requestHeadersPolicy", map[string]any{"set": []any{map[string]any{"name": "x"}}}, "spec.routes[0].requestHeadersPolicy.set[0].value"},
		{"upstream validation without subject", extsvc, "spec.validation", map[string]any{"caSecret": "ca"}, "spec.validation.subjectName"},
		{"extension service without services", extsvc, "spec.services", []any{}, "spec.services"},
		{"extension service protocol tls", extsvc, "spec.protocol", "tls", "spec.protocol"},
		{"extension service protocol version v2", extsvc, "spec.protocolVersion", "v2", "spec.protocolVersion"},
		{"extension service lb strategy unknown", extsvc, "spec.loadBalancerPolicy.strategy", "LeastConn", "spec.loadBalancerPolicy.strategy"},
		{"extension service idle timeout", extsvc, "spec.timeoutPolicy.idle", "1 hour", "spec.timeoutPolicy.idle"},
		{"extension service port 0", extsvc, "spec.services.0.port", 0, "spec.services[0].port"},
		{"condition status not an enum", status, "status.conditions.0.errors.0.status", "Yes", "status.conditions[0].errors[0].status"},
		{"condition reason missing", status, "status.conditions.0.errors.0.reason", nil, "status.conditions[0].errors[0].reason"},
		{"duplicate condition types", status, "status.conditions.1", deepCopyJSON(t, status)["status"].(map[string]any)["conditions"].([]any)[0], "status.conditions[1]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := deepCopyJSON(t, tc.base)
			set(t, obj, tc.path, tc.value)
			s := schemaFor(t, all, obj)
			errs := s.validate(obj)
			if len(errs) == 0 {
				t.Fatalf("accepted %s=%v", tc.path, tc.value)
			}
			if !strings.Contains(errs.ToAggregate().Error(), tc.errPath) {
				t.Errorf("errors do not mention %s: %v", tc.errPath, errs.ToAggregate())
			}
		})
	}
}

func remarshal(t *testing.T, in, out any) {
	t.Helper()
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatal(err)
	}
}

func deepCopyJSON(t *testing.T, in map[string]any) map[string]any {
	t.Helper()
	out := map[string]any{}
	remarshal(t, in, &out)
	return out
}

// set sets (or, with a nil value, deletes) the field at a dotted path,
// creating maps on the way; numeric elements index lists, and an index one
// past the end appends.
func set(t *testing.T, obj map[string]any, path string, value any) {
	t.Helper()
	parts := strings.Split(path, ".")
	var cur any = obj
	for i, p := range parts {
		last := i == len(parts)-1
		switch c := cur.(type) {
		case map[string]any:
			if last {
				if value == nil {
					delete(c, p)
				} else {
					c[p] = value
				}
				return
			}
			if _, ok := c[p]; !ok {
				c[p] = map[string]any{}
			}
			cur = c[p]
		case []any:
			idx := 0
			for _, r := range p {
				idx = idx*10 + int(r-'0')
			}
			if last {
				if idx == len(c) {
					c = append(c, value)
					set(t, obj, strings.Join(parts[:i], "."), c)
				} else {
					c[idx] = value
				}
				return
			}
			cur = c[idx]
		default:
			t.Fatalf("cannot walk %s at %q", path, p)
		}
	}
}

// TestRestrictionsSurviveTheAPIServer writes the upstream fields that
// restrict traffic (IP filters, JWT verification, query parameter, regex
// and case-insensitive conditions) and expects the schema to keep all of
// them, as written and after a round trip through the Go types.
func TestRestrictionsSurviveTheAPIServer(t *testing.T) {
	obj, s := decodeWithSchema(t, `
apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {name: p, namespace: ns}
spec:
  virtualhost:
    fqdn: a.example.com
    tls: {secretName: s}
    ipAllowPolicy: [{source: Peer, cidr: 10.0.0.0/8}]
    jwtProviders:
    - name: p
      default: true
      issuer: i
      audiences: [a]
      remoteJWKS: {uri: https://idp.example.com/jwks, timeout: 1s, dnsLookupFamily: v4}
  routes:
  - conditions:
    - regex: /admin/.*
    - queryParameter: {name: q, exact: x, ignoreCase: true}
    - header: {name: h, regex: "^a+$", ignoreCase: true}
    - header: {name: g, notexact: x, treatMissingAsEmpty: true}
    ipDenyPolicy: [{source: Remote, cidr: 192.0.2.1}]
    jwtVerificationPolicy: {require: p}
    services:
    - name: s
      port: 80
      validation: {caSecret: ca, subjectName: a, subjectNames: [a, b]}
`)
	if errs := s.validate(obj); len(errs) > 0 {
		t.Fatalf("invalid: %v", errs.ToAggregate())
	}
	if pruned := s.prune(deepCopyJSON(t, obj)); len(pruned) > 0 {
		t.Errorf("pruned: %v", pruned)
	}
	var p contourv1.HTTPProxy
	remarshal(t, obj, &p)
	roundTrip := map[string]any{}
	remarshal(t, &p, &roundTrip)
	if pruned := s.prune(roundTrip); len(pruned) > 0 {
		t.Errorf("pruned after a round trip through the Go types: %v", pruned)
	}
	if !reflect.DeepEqual(roundTrip["spec"], obj["spec"]) {
		t.Errorf("spec changed in a round trip through the Go types:\n got %v\nwant %v", roundTrip["spec"], obj["spec"])
	}

	// The new fields are validated too.
	for _, tc := range []struct{ path, errPath string }{
		{"spec.virtualhost.ipAllowPolicy.0.source", "spec.virtualhost.ipAllowPolicy[0].source"},
		{"spec.virtualhost.jwtProviders.0.remoteJWKS.dnsLookupFamily", "spec.virtualhost.jwtProviders[0].remoteJWKS.dnsLookupFamily"},
	} {
		bad := deepCopyJSON(t, obj)
		set(t, bad, tc.path, "Elsewhere")
		errs := s.validate(bad)
		if len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), tc.errPath) {
			t.Errorf("%s=Elsewhere: errors %v, want one at %s", tc.path, errs.ToAggregate(), tc.errPath)
		}
	}
}

// decodeWithSchema decodes one object written in YAML and returns it with
// the schema of its kind and version.
func decodeWithSchema(t *testing.T, doc string) (map[string]any, crdSchema) {
	t.Helper()
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
		t.Fatal(err)
	}
	return obj, schemaFor(t, schemas(t), obj)
}
