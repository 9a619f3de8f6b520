package apis_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// upstreamContour is the Contour release whose projectcontour.io API the
// types must carry completely.
const upstreamContour = "github.com/projectcontour/contour@v1.33.8"

// upstreamExtras are the schema paths that exist only in Portcullis. The
// comparison does not descend into them. Every entry must exist in our CRDs,
// so a misspelt field in the types shows up as an unexpected extra.
var upstreamExtras = map[string]string{
	"HTTPProxy spec.virtualhost.extProc":                             "external processing at the virtual host",
	"HTTPProxy spec.routes[].extProcPolicy":                          "external processing per route",
	"HTTPProxy spec.virtualhost.authorization.globalExtAuthDisabled": "opt out of the global external authorization",
	"HTTPProxy spec.virtualhost.authorization.extensionRef.kind":     "kind of the referenced extension",
	// Contour's HTTP authorization servers, newer than upstreamContour:
	// same names, so objects written for it apply unchanged.
	"HTTPProxy spec.virtualhost.authorization.serviceType":  "authorization server protocol (grpc, http)",
	"HTTPProxy spec.virtualhost.authorization.httpSettings": "HTTP authorization server settings",
	"ExtensionService spec.healthCheckPolicy":               "gRPC health checks of the backends",
	"ExtensionService status.clusterName":                   "name of the generated Envoy cluster",
}

// upstreamDeviations are the places where our schema deliberately differs
// from upstream in something other than a missing field. Keyed
// "<kind> <path> <aspect>".
var upstreamDeviations = map[string]string{
	// Upstream defaults the whole status on read; Portcullis leaves it empty
	// until the control plane writes it.
	"HTTPProxy status default": "no status placeholder before the first write",
	// Upstream accepts any string (unknown values fall back); Portcullis
	// rejects them at admission.
	"HTTPProxy spec.virtualhost.tls.minimumProtocolVersion enum": "only 1.2 and 1.3",
	"HTTPProxy spec.virtualhost.tls.maximumProtocolVersion enum": "only 1.2 and 1.3",
	"HTTPProxy spec.routes[].loadBalancerPolicy.strategy enum":   "known strategies only",
	"HTTPProxy spec.tcpproxy.loadBalancerPolicy.strategy enum":   "known strategies only",
	"ExtensionService spec.loadBalancerPolicy.strategy enum":     "known strategies only",
	// Generated from k8s.io/api's PortStatus, whose error field carries
	// both +optional and +kubebuilder:validation:Required; this
	// controller-gen reads the latter. Status only, and never written here.
	"HTTPProxy status.loadBalancer.ingress[].ports[] required": "error required",
	// Portcullis requires what upstream only documents as required.
	"HTTPProxy spec.virtualhost.authorization.extensionRef required": "name",
}

// TestTypesCarryTheWholeUpstreamAPI compares, field by field, the schema of
// every served version of the upstream HTTPProxy, TLSCertificateDelegation
// and ExtensionService CRDs with ours: no upstream field may be missing
// (the API server would prune it, and a restriction written by a user would
// silently disappear), and types, formats, required fields, list semantics,
// enums, defaults and CEL rules must agree, except for the deviations listed
// above.
func TestTypesCarryTheWholeUpstreamAPI(t *testing.T) {
	upstream := loadUpstreamCRDs(t)
	ours := loadCRDs(t)

	c := &schemaComparison{seenExtras: map[string]bool{}, usedDeviations: map[string]bool{}}
	for _, kind := range []string{"HTTPProxy", "TLSCertificateDelegation", "ExtensionService"} {
		up, ok := upstream[kind]
		if !ok {
			t.Errorf("%s: no CRD in the upstream 01-crds.yaml", kind)
			continue
		}
		our, ok := ours[kind]
		if !ok {
			t.Errorf("%s: no CRD in apis/crds", kind)
			continue
		}
		for _, uv := range up.Spec.Versions {
			if !uv.Served {
				continue
			}
			var ov *apiextensionsv1.CustomResourceDefinitionVersion
			for i := range our.Spec.Versions {
				if our.Spec.Versions[i].Name == uv.Name {
					ov = &our.Spec.Versions[i]
				}
			}
			if ov == nil || !ov.Served {
				t.Errorf("%s: upstream serves version %s, we do not", kind, uv.Name)
				continue
			}
			c.compare(kind, "", uv.Schema.OpenAPIV3Schema, ov.Schema.OpenAPIV3Schema)
		}
	}

	for key := range upstreamExtras {
		if !c.seenExtras[key] {
			c.mismatches = append(c.mismatches, key+": listed as a Portcullis extra but not in our CRD")
		}
	}
	for key := range upstreamDeviations {
		if !c.usedDeviations[key] {
			c.mismatches = append(c.mismatches, key+": listed as a deviation but the schemas agree there")
		}
	}
	sort.Strings(c.missing)
	sort.Strings(c.mismatches)
	if len(c.missing) > 0 {
		t.Errorf("%d upstream fields missing from our CRDs (the API server prunes them):\n  %s", len(c.missing), strings.Join(c.missing, "\n  "))
	}
	if len(c.mismatches) > 0 {
		t.Errorf("%d differences from upstream:\n  %s", len(c.mismatches), strings.Join(c.mismatches, "\n  "))
	}
}

type schemaComparison struct {
	missing        []string
	mismatches     []string
	seenExtras     map[string]bool
	usedDeviations map[string]bool
}

// differ records a difference in aspect at path unless it is a listed
// deviation.
func (c *schemaComparison) differ(kind, path, aspect, format string, args ...any) {
	key := kind + " " + displayPath(path) + " " + aspect
	if _, ok := upstreamDeviations[key]; ok {
		c.usedDeviations[key] = true
		return
	}
	c.mismatches = append(c.mismatches, fmt.Sprintf("%s %s: %s", kind, displayPath(path), fmt.Sprintf(format, args...)))
}

func displayPath(path string) string {
	if path == "" {
		return "(root)"
	}
	return path
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func (c *schemaComparison) compare(kind, path string, up, our *apiextensionsv1.JSONSchemaProps) {
	if up.Type != our.Type {
		c.differ(kind, path, "type", "type %q, upstream %q", our.Type, up.Type)
	}
	if up.Format != our.Format {
		c.differ(kind, path, "format", "format %q, upstream %q", our.Format, up.Format)
	}
	if up.XPreserveUnknownFields != nil && *up.XPreserveUnknownFields && (our.XPreserveUnknownFields == nil || !*our.XPreserveUnknownFields) {
		c.differ(kind, path, "preserve-unknown-fields", "upstream preserves unknown fields, we prune them")
	}
	if up.XIntOrString != our.XIntOrString || up.XEmbeddedResource != our.XEmbeddedResource {
		c.differ(kind, path, "x-kubernetes", "int-or-string %v / embedded-resource %v, upstream %v / %v", our.XIntOrString, our.XEmbeddedResource, up.XIntOrString, up.XEmbeddedResource)
	}
	if !sameSet(up.Required, our.Required) {
		c.differ(kind, path, "required", "required %q, upstream %q", sorted(our.Required), sorted(up.Required))
	}
	if !reflect.DeepEqual(up.XListType, our.XListType) || !sameSet(up.XListMapKeys, our.XListMapKeys) {
		c.differ(kind, path, "list-type", "list type %v keys %q, upstream %v keys %q", deref(our.XListType), our.XListMapKeys, deref(up.XListType), up.XListMapKeys)
	}
	if upEnum, ourEnum := enumValues(up.Enum), enumValues(our.Enum); !sameSet(upEnum, ourEnum) {
		c.differ(kind, path, "enum", "enum %q, upstream %q", ourEnum, upEnum)
	}
	if upDef, ourDef := rawJSON(up.Default), rawJSON(our.Default); upDef != ourDef {
		c.differ(kind, path, "default", "default %s, upstream %s", ourDef, upDef)
	}
	for _, rule := range up.XValidations {
		if !slices.ContainsFunc(our.XValidations, func(r apiextensionsv1.ValidationRule) bool { return r.Rule == rule.Rule }) {
			c.differ(kind, path, "rule", "no CEL rule %q", rule.Rule)
		}
	}

	for name, upProp := range up.Properties {
		p := join(path, name)
		ourProp, ok := our.Properties[name]
		if !ok {
			c.missing = append(c.missing, kind+" "+p)
			continue
		}
		c.compare(kind, p, &upProp, &ourProp)
	}
	for name := range our.Properties {
		if _, ok := up.Properties[name]; ok {
			continue
		}
		key := kind + " " + join(path, name)
		if _, ok := upstreamExtras[key]; ok {
			c.seenExtras[key] = true
			continue
		}
		c.mismatches = append(c.mismatches, key+": not in upstream and not a listed Portcullis extra (misspelt?)")
	}

	switch {
	case up.Items != nil && our.Items == nil:
		c.differ(kind, path, "items", "no item schema, upstream has one")
	case up.Items != nil:
		if up.Items.Schema == nil || our.Items.Schema == nil || len(up.Items.JSONSchemas) > 0 {
			c.differ(kind, path, "items", "item schemas not comparable")
		} else {
			c.compare(kind, path+"[]", up.Items.Schema, our.Items.Schema)
		}
	case our.Items != nil:
		c.differ(kind, path, "items", "item schema that upstream does not have")
	}

	upAP, ourAP := up.AdditionalProperties, our.AdditionalProperties
	switch {
	case upAP == nil && ourAP == nil:
	case upAP == nil || ourAP == nil || upAP.Allows != ourAP.Allows || (upAP.Schema == nil) != (ourAP.Schema == nil):
		c.differ(kind, path, "additionalProperties", "additionalProperties %s, upstream %s", describeAP(ourAP), describeAP(upAP))
	case upAP.Schema != nil:
		c.compare(kind, path+"{}", upAP.Schema, ourAP.Schema)
	}
}

func describeAP(ap *apiextensionsv1.JSONSchemaPropsOrBool) string {
	switch {
	case ap == nil:
		return "unset"
	case ap.Schema != nil:
		return "a schema"
	default:
		return fmt.Sprint(ap.Allows)
	}
}

func sameSet(a, b []string) bool {
	return slices.Equal(sorted(a), sorted(b))
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	sort.Strings(s)
	return s
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func enumValues(enum []apiextensionsv1.JSON) []string {
	var out []string
	for _, e := range enum {
		out = append(out, string(e.Raw))
	}
	return sorted(out)
}

// rawJSON normalises a default value so that formatting does not count.
func rawJSON(v *apiextensionsv1.JSON) string {
	if v == nil {
		return ""
	}
	var x any
	if err := json.Unmarshal(v.Raw, &x); err != nil {
		return string(v.Raw)
	}
	b, _ := json.Marshal(x)
	return string(b)
}

// loadUpstreamCRDs finds the upstream module with the go command (from the
// module cache, or downloaded through the module proxy) and reads the
// projectcontour.io CRDs of its examples/contour/01-crds.yaml, keyed by kind.
func loadUpstreamCRDs(t *testing.T) map[string]*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	cmd := exec.Command("go", "mod", "download", "-json", upstreamContour)
	cmd.Dir = t.TempDir() // outside any module: nothing to edit
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var mod struct{ Dir, Error string }
	if jerr := json.Unmarshal(stdout.Bytes(), &mod); jerr != nil && err == nil {
		err = jerr
	}
	if err != nil || mod.Error != "" || mod.Dir == "" {
		t.Fatalf("cannot locate %s with `go mod download -json` (needs the go command and either the module cache or network access to the module proxy): %v %s\n%s%s",
			upstreamContour, err, mod.Error, stdout.String(), stderr.String())
	}

	file := filepath.Join(mod.Dir, "examples", "contour", "01-crds.yaml")
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, doc := range docSeparator.Split(string(b), -1) {
		var tm struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if tm.Kind != "CustomResourceDefinition" {
			continue
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal([]byte(doc), crd); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if crd.Spec.Group == "projectcontour.io" {
			out[crd.Spec.Names.Kind] = crd
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no projectcontour.io CRDs", file)
	}
	return out
}
