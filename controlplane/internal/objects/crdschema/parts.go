package crdschema

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	apiextensions "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/kube-openapi/pkg/validation/strfmt"
	"k8s.io/kube-openapi/pkg/validation/validate"
)

// checker is one version of one kind's validation, compiled once. It
// validates an object in parts: each property of its spec (a route's
// parentRefs, hostnames, rules) on its own, then what remains (apiVersion,
// kind, metadata, which of the spec's properties are there), each
// remembered by its JSON text. That is the API server's validation split,
// not a copy of it: the schema's and a CEL rule's verdict on a value
// depends on that value alone (a rule's self; oldSelf is for updates,
// which files do not make), so the same text of spec.rules has the same
// errors in every route, and 10,000 routes that share their rules' text
// cost little more than reading them. When the spec or the object has
// rules of their own (they see the whole spec), the spec is not split.
type checker struct {
	rest  *part   // the object with its parts' values left out
	parts []*part // by name; none when the spec is not split
	// anyMetadata: nothing in the schema reads metadata but its type (the
	// Gateway API's CRDs: the API server checks metadata itself), so what
	// remains is remembered without the object's name.
	anyMetadata bool
}

// validators are the schema's and the CEL rules' of one schema.
type validators struct {
	structural *structuralschema.Structural // for the defaults and the CEL rules
	schema     validation.SchemaCreateValidator
	own        validation.SchemaCreateValidator // the part's schema alone (faster)
	cel        *cel.Validator                   // nil: no CEL rule
	// lists is the structural schema of the object as far as the part,
	// for the list types' invariants.
	lists *structuralschema.Structural
}

// part is one property of the spec, validated on its own, or what
// remains of the object.
type part struct {
	name     string
	path     *field.Path // spec.<name>
	v        validators
	nullable bool
	// def is the property's default as JSON (nil: none): validated in
	// its place when the object lacks it, as the API server defaults it.
	def []byte
	// memo: the verdicts by the sha256 of the value's JSON text.
	mu   sync.RWMutex
	memo map[[sha256.Size]byte]verdict
}

// verdict is what validating one part's value found.
type verdict struct {
	schema field.ErrorList // the schema's, the list types' (x-kubernetes-list-type)
	cel    field.ErrorList // the CEL rules', unless schema has a blocking error
	cost   int64           // of the CEL rules, out of the object's budget
}

// memoLimit bounds the parts remembered, all kinds together (serve
// --file reads files again for as long as it runs): past it, parts are
// validated without being remembered. A verdict is a few hundred bytes.
const memoLimit = 100_000

var memoSize atomic.Int64

// budget is the CEL cost one object may take, the API server's
// (celconfig.RuntimeCELCostBudget); each rule's evaluation is also
// limited to celconfig.PerCallLimit, as there. A file cannot make
// validation run longer than the API server would let it.
const budget = celconfig.RuntimeCELCostBudget

// outOfBudget is the API server's error when the CEL rules of an object
// cost more than budget.
const outOfBudget = "validation failed due to running out of cost budget, no further validation rules will be run"

// notChecked is the API server's error in place of the CEL rules' when the
// schema found a blocking error (hasBlockingErr, below).
const notChecked = "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"

// blocking: errs has an error after which the API server does not run
// the object's CEL rules (k8s.io/apiextensions-apiserver's
// customResourceStrategy.Validate): a value of the wrong type, missing,
// not one of an enum's, or too long or too many, which the rules were not
// written for (and which the rules' cost estimates do not bound).
func blocking(errs field.ErrorList) bool {
	for _, e := range errs {
		switch e.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return true
		}
	}
	return false
}

func newChecker(root *apiextensions.JSONSchemaProps) (*checker, error) {
	root = root.DeepCopy()
	// The API server ignores a status written with the object (the
	// status subresource's own endpoint writes it): not validated.
	delete(root.Properties, "status")
	c := &checker{}
	if spec, ok := root.Properties["spec"]; ok && splittable(root) && splittable(&spec) {
		for _, name := range sortedKeys(spec.Properties) {
			p, err := newPart(name, spec.Properties[name])
			if err != nil {
				return nil, err
			}
			c.parts = append(c.parts, p)
			// Anything passes here: the part is validated on its own.
			spec.Properties[name] = apiextensions.JSONSchemaProps{}
		}
		root.Properties["spec"] = spec
	}
	v, err := newValidators(root, root, true)
	if err != nil {
		return nil, err
	}
	v.lists = v.structural
	c.rest = &part{v: v}
	meta := root.Properties["metadata"]
	c.anyMetadata = v.cel == nil && meta.Type == "object" && reflect.DeepEqual(meta, apiextensions.JSONSchemaProps{Type: "object"})
	return c, nil
}

// splittable: s has no rule of its own, which would see its properties
// together.
func splittable(s *apiextensions.JSONSchemaProps) bool {
	return len(s.XValidations) == 0 && len(s.AllOf) == 0 && len(s.AnyOf) == 0 && len(s.OneOf) == 0 && s.Not == nil && len(s.Properties) > 0
}

func newPart(name string, s apiextensions.JSONSchemaProps) (*part, error) {
	// The schema validator sees the part where it is in the object, so
	// that its messages name the field as the API server's do.
	wrapped := &apiextensions.JSONSchemaProps{Type: "object", Properties: map[string]apiextensions.JSONSchemaProps{
		"spec": {Type: "object", Properties: map[string]apiextensions.JSONSchemaProps{name: s}}}}
	v, err := newValidators(wrapped, &s, false)
	if err != nil {
		return nil, err
	}
	v.lists = &structuralschema.Structural{Generic: structuralschema.Generic{Type: "object"},
		Properties: map[string]structuralschema.Structural{name: *v.structural}}
	p := &part{name: name, path: field.NewPath("spec", name), v: v, nullable: s.Nullable}
	if s.Default != nil {
		if p.def, err = json.Marshal(*s.Default); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// newValidators compiles the schema validator of openAPI and the CEL
// rules of s.
func newValidators(openAPI, s *apiextensions.JSONSchemaProps, isResourceRoot bool) (validators, error) {
	structural, err := structuralschema.NewStructural(s)
	if err != nil {
		return validators{}, err
	}
	sv, err := newSchemaValidator(openAPI)
	if err != nil {
		return validators{}, err
	}
	own := sv
	if openAPI != s {
		if own, err = newSchemaValidator(s); err != nil {
			return validators{}, err
		}
	}
	return validators{structural: structural, schema: sv, own: own, cel: cel.NewValidator(structural, isResourceRoot, celconfig.PerCallLimit)}, nil
}

// newSchemaValidator is the API server's validator of s for a create
// (validation.NewSchemaValidator's, which ratchets only updates), built
// once: the ratcheting one builds kube-openapi's validator again on every
// call, which costs more than validating a small value.
func newSchemaValidator(s *apiextensions.JSONSchemaProps) (validation.SchemaCreateValidator, error) {
	_, openAPI, err := validation.NewSchemaValidator(s)
	if err != nil {
		return nil, err
	}
	return prebuilt{validate.NewSchemaValidator(openAPI, nil, "", strfmt.Default)}, nil
}

// prebuilt is validation's basicSchemaValidator (the API server's
// validator without ratcheting), which it does not export.
type prebuilt struct{ *validate.SchemaValidator }

func (p prebuilt) Validate(value any, _ ...validation.ValidationOption) *validate.Result {
	return p.SchemaValidator.Validate(value)
}

// check validates doc, an object as JSON (as encoding/json writes it).
// Its status is not read, nor fields the schema's root does not have
// (the API server drops them).
func (c *checker) check(doc []byte) (field.ErrorList, error) {
	var apiVersion, kind, metadata, spec []byte
	notObject, err := members(doc, func(k string, raw []byte) {
		switch k {
		case "apiVersion":
			apiVersion = raw
		case "kind":
			kind = raw
		case "metadata":
			metadata = raw
		case "spec":
			spec = raw
		}
	})
	if err != nil || notObject {
		return nil, errors.Join(err, errNotJSON)
	}
	if c.anyMetadata && len(metadata) > 0 && metadata[0] == '{' {
		metadata = []byte("{}")
	}
	verdicts := make([]verdict, 0, len(c.parts)+1)
	if spec != nil && len(c.parts) > 0 {
		if spec, err = c.checkParts(spec, &verdicts); err != nil {
			return nil, err
		}
	}
	verdicts = append(verdicts, c.rest.check(object(apiVersion, kind, metadata, spec)))
	return c.verdict(verdicts), nil
}

// checkParts adds the verdicts of the parts of spec, and returns what
// remains of it: which parts it has (fields the schema does not have are
// dropped, as the API server does). A spec that is not an object remains
// whole, for the schema to say so.
func (c *checker) checkParts(spec []byte, verdicts *[]verdict) ([]byte, error) {
	// The parts' values, by the parts' order (a few: no map).
	values := make([][]byte, len(c.parts))
	notObject, err := members(spec, func(k string, raw []byte) {
		if i := slices.IndexFunc(c.parts, func(p *part) bool { return p.name == k }); i >= 0 {
			values[i] = raw
		}
	})
	if err != nil || notObject {
		return spec, err
	}
	skeleton := make([]byte, 1, 64)
	skeleton[0] = '{'
	for i, p := range c.parts {
		raw := values[i]
		if raw == nil || (!p.nullable && string(raw) == "null") {
			// The API server drops a null and defaults what is missing.
			if raw = p.def; raw == nil {
				continue
			}
		}
		if len(skeleton) > 1 {
			skeleton = append(skeleton, ',')
		}
		skeleton = append(strconv.AppendQuote(skeleton, p.name), ":{}"...)
		*verdicts = append(*verdicts, p.check(raw))
	}
	return append(skeleton, '}'), nil
}

// object is the JSON text of an object of these fields (nil: absent).
func object(apiVersion, kind, metadata, spec []byte) []byte {
	out := make([]byte, 1, len(apiVersion)+len(kind)+len(metadata)+len(spec)+48)
	out[0] = '{'
	for _, f := range [...]struct {
		name  string
		value []byte
	}{{"apiVersion", apiVersion}, {"kind", kind}, {"metadata", metadata}, {"spec", spec}} {
		if f.value != nil {
			if len(out) > 1 {
				out = append(out, ',')
			}
			out = append(append(append(append(out, '"'), f.name...), `":`...), f.value...)
		}
	}
	return append(out, '}')
}

// verdict puts the parts' verdicts together as the API server's on the
// whole object: the schema's errors, then the CEL rules' unless the
// schema found a blocking error, within the object's cost budget.
func (c *checker) verdict(verdicts []verdict) field.ErrorList {
	var errs field.ErrorList
	for _, v := range verdicts {
		errs = append(errs, v.schema...)
	}
	if blocking(errs) {
		if c.rest.v.cel != nil || slices.ContainsFunc(c.parts, func(p *part) bool { return p.v.cel != nil }) {
			errs = append(errs, field.Invalid(nil, nil, notChecked))
		}
		return errs
	}
	var cost int64
	for _, v := range verdicts {
		errs = append(errs, v.cel...)
		if cost += v.cost; cost > budget {
			return append(errs, field.Invalid(nil, nil, outOfBudget))
		}
	}
	return errs
}

// check is the verdict on one value of the part, or on what remains of
// an object, as JSON text.
func (p *part) check(text []byte) verdict {
	key := sha256.Sum256(text)
	p.mu.RLock()
	v, ok := p.memo[key]
	p.mu.RUnlock()
	if ok {
		return v
	}
	var value any
	if err := utiljson.Unmarshal(text, &value); err != nil {
		return verdict{schema: field.ErrorList{field.Invalid(p.path, string(text), err.Error())}}
	}
	structuraldefaulting.Default(value, p.v.structural)
	obj, lists, path := map[string]any{"spec": map[string]any{p.name: value}}, map[string]any{p.name: value}, field.NewPath("spec")
	if p.path == nil { // what remains of the object: value is the object
		obj, _ = value.(map[string]any)
		lists, path = obj, nil
	}
	// The part's own schema finds whether it is valid; the object's
	// schema as far as the part words the errors.
	if v.schema = validation.ValidateCustomResource(nil, value, p.v.own); len(v.schema) > 0 {
		v.schema = validation.ValidateCustomResource(nil, obj, p.v.schema)
	}
	v.schema = append(v.schema, objectmeta.Validate(context.Background(), p.path, value, p.v.structural, false)...)
	v.schema = append(v.schema, listtype.ValidateListSetsAndMaps(path, p.v.lists, lists)...)
	if !blocking(v.schema) {
		// With a blocking error anywhere in the object the API server
		// runs none of its rules: these would not be read.
		var remaining int64
		v.cel, remaining = p.v.cel.Validate(context.Background(), p.path, p.v.structural, value, nil, budget)
		v.cost = budget - remaining
	}
	if memoSize.Add(1) <= memoLimit {
		p.mu.Lock()
		if p.memo == nil {
			p.memo = map[[sha256.Size]byte]verdict{}
		}
		p.memo[key] = v
		p.mu.Unlock()
	}
	return v
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
