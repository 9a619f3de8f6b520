// Package crdschema checks Gateway API objects read from files against
// their CRDs' own validation (the OpenAPI schema and the CEL rules), as
// the API server does before it stores one: in file mode nothing else
// would refuse what a cluster refuses. The CRDs are the chart's
// (crds/ is a copy of charts/portcullis/gateway-api-crds, made by
// hack/gateway-api-crds.sh; a test keeps them equal).
//
// It is written for tens of thousands of objects per run (parts.go): each
// kind's validators are compiled once per process, when the first object
// of that kind and version is read; an object is checked from its JSON
// text, part by part, and a part whose text was already checked is not
// checked again.
package crdschema

import (
	"bytes"
	"embed"
	"fmt"
	"sync"

	apiextensions "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

//go:embed crds/*.yaml
var crdFiles embed.FS

// Group is the API group whose CRDs are here.
const Group = "gateway.networking.k8s.io"

// files are the CRDs by kind (TestFilesAreTheCRDsKinds keeps the table
// true): Covers answers without reading them, and only the kinds read
// are compiled.
var files = map[string]string{
	"BackendTLSPolicy": "backendtlspolicies",
	"GatewayClass":     "gatewayclasses",
	"Gateway":          "gateways",
	"GRPCRoute":        "grpcroutes",
	"HTTPRoute":        "httproutes",
	"ListenerSet":      "listenersets",
	"ReferenceGrant":   "referencegrants",
	"TCPRoute":         "tcproutes",
	"TLSRoute":         "tlsroutes",
	"UDPRoute":         "udproutes",
}

// checkers are the compiled validations by version and kind, each
// compiled on first use (compiling every kind's CEL rules costs more than
// checking thousands of objects).
var checkers sync.Map // schema.GroupVersionKind -> func() (*checker, error)

// Covers reports whether gvk is a kind whose CRD is here (a version it
// does not serve is not).
func Covers(gvk schema.GroupVersionKind) bool {
	if gvk.Group != Group || files[gvk.Kind] == "" {
		return false
	}
	c, err := checkerFor(gvk)
	return err == nil && c != nil
}

// Check validates doc, an object of gvk as JSON, against its CRD: every
// error the schema and the CEL rules find, as the API server words them,
// after the CRD's defaults are applied (as the API server applies them).
// Its status is not checked (the API server ignores a status written
// with the object). None for a kind whose CRD is not here.
func Check(gvk schema.GroupVersionKind, doc []byte) (field.ErrorList, error) {
	if !Covers(gvk) {
		return nil, nil
	}
	c, err := checkerFor(gvk)
	if err != nil {
		return nil, err
	}
	return c.check(doc)
}

func checkerFor(gvk schema.GroupVersionKind) (*checker, error) {
	f, ok := checkers.Load(gvk)
	if !ok {
		f, _ = checkers.LoadOrStore(gvk, sync.OnceValues(func() (*checker, error) { return compile(gvk) }))
	}
	return f.(func() (*checker, error))()
}

// compile compiles the validation of one version of one kind; nil when
// the CRD does not serve that version.
func compile(gvk schema.GroupVersionKind) (*checker, error) {
	file := files[gvk.Kind]
	if file == "" {
		return nil, nil
	}
	// Read for this version alone, and not kept: the validators keep what
	// they need of it.
	crd, err := readCRD(file)
	if err != nil {
		return nil, err
	}
	for _, v := range crd.Spec.Versions {
		if v.Name != gvk.Version || !v.Served || v.Schema == nil {
			continue
		}
		var internal apiextensions.CustomResourceValidation
		if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(v.Schema, &internal, nil); err != nil {
			return nil, err
		}
		c, err := newChecker(internal.OpenAPIV3Schema)
		if err != nil {
			return nil, fmt.Errorf("the %s CRD, %s: %w", gvk.Kind, v.Name, err)
		}
		return c, nil
	}
	return nil, nil
}

// readCRD reads the CRD of file, a name of files.
func readCRD(file string) (*apiextensionsv1.CustomResourceDefinition, error) {
	path := "crds/" + Group + "_" + file + ".yaml"
	b, err := crdFiles.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(bytes.TrimSpace(b), &crd); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &crd, nil
}
