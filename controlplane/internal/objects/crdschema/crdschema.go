// Package crdschema checks Gateway API objects read from files against
// their CRDs' own validation (the OpenAPI schema and the CEL rules), as
// the API server does before it stores one: in file mode nothing else
// would refuse what a cluster refuses. The CRDs are the chart's
// (crds/ is a copy of charts/portcullis/gateway-api-crds, made by
// hack/gateway-api-crds.sh; a test keeps them equal).
package crdschema

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sync"

	apiextensions "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"
)

//go:embed crds/*.yaml
var crdFiles embed.FS

// checker is one version of one CRD's validation, compiled once.
type checker struct {
	structural *structuralschema.Structural
	schema     validation.SchemaValidator
	// cel checks the object's CEL rules but those of spec.rules' items
	// when the kind has them (routes): rules checks those one item at a
	// time (memo).
	cel   *cel.Validator
	rules *itemRules
}

// checkers are the compiled validations by group, version and kind;
// built on first use (compiling the CEL rules of every kind takes a
// while, and most runs read no Gateway API object).
var checkers = sync.OnceValues(compile)

// Covers reports whether gvk is a kind whose CRD is here.
func Covers(gvk schema.GroupVersionKind) bool {
	cs, err := checkers()
	return err == nil && cs[gvk] != nil
}

// Check validates obj (an object of gvk as decoded JSON, which Check
// defaults in place as the API server does before validating) against
// its CRD: every error the schema and the CEL rules find, as the API
// server words them. None for a kind whose CRD is not here.
func Check(gvk schema.GroupVersionKind, obj map[string]any) (field.ErrorList, error) {
	cs, err := checkers()
	if err != nil {
		return nil, err
	}
	c := cs[gvk]
	if c == nil {
		return nil, nil
	}
	structuraldefaulting.Default(obj, c.structural)
	errs := validation.ValidateCustomResource(nil, obj, c.schema)
	celErrs, _ := c.cel.Validate(context.Background(), nil, c.structural, obj, nil, celconfig.RuntimeCELCostBudget)
	errs = append(errs, celErrs...)
	if c.rules != nil {
		spec, _ := obj["spec"].(map[string]any)
		items, _ := spec["rules"].([]any)
		for i, item := range items {
			errs = append(errs, c.rules.check(i, item)...)
		}
	}
	return errs, nil
}

// compile reads every CRD and compiles the schema of each served version.
func compile() (map[schema.GroupVersionKind]*checker, error) {
	out := map[schema.GroupVersionKind]*checker{}
	err := fs.WalkDir(crdFiles, "crds", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := crdFiles.ReadFile(path)
		if err != nil {
			return err
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(bytes.TrimSpace(b), &crd); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		for _, v := range crd.Spec.Versions {
			if !v.Served || v.Schema == nil {
				continue
			}
			c, err := newChecker(v.Schema)
			if err != nil {
				return fmt.Errorf("%s %s: %w", path, v.Name, err)
			}
			out[schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}] = c
		}
		return nil
	})
	return out, err
}

// newChecker compiles one version's schema: its structural form (for the
// defaults and the CEL rules) and its OpenAPI validator.
func newChecker(v1 *apiextensionsv1.CustomResourceValidation) (*checker, error) {
	var internal apiextensions.CustomResourceValidation
	if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(v1, &internal, nil); err != nil {
		return nil, err
	}
	s, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, err
	}
	c := &checker{structural: s}
	root, openAPI := s, internal.OpenAPIV3Schema
	if items, props := ruleItems(s), ruleItemProps(openAPI); items != nil && props != nil {
		itemSchema, _, err := validation.NewSchemaValidator(props)
		if err != nil {
			return nil, err
		}
		c.rules = &itemRules{structural: items, schema: itemSchema, cel: cel.NewValidator(items, false, celconfig.PerCallLimit)}
		root, openAPI = s.DeepCopy(), openAPI.DeepCopy()
		stripRules(ruleItems(root))
		// Any item passes the object's schema: itemRules checks them.
		ruleItemsOf(openAPI).Schema = &apiextensions.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr(true)}
	}
	sv, _, err := validation.NewSchemaValidator(openAPI)
	if err != nil {
		return nil, err
	}
	c.schema = sv
	c.cel = cel.NewValidator(root, true, celconfig.PerCallLimit)
	return c, nil
}

func ptr[T any](v T) *T { return &v }
