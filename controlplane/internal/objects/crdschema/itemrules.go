package crdschema

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
)

// itemRules checks a route's rules (spec.rules' items) against their
// schema and CEL rules one item at a time, memoized by the item's
// content: most of a route's validation, and most of its cost (about a
// millisecond a route), is there, and routes repeat their rules' shapes.
// An item's schema and CEL rules see only the item, so the same item has
// the same errors in any route.
// The API server's per-object cost budget is per item here.
type itemRules struct {
	structural *structuralschema.Structural
	schema     validation.SchemaValidator
	cel        *cel.Validator
	memo       sync.Map // sha256 of the item's JSON -> field.ErrorList at itemPath
	size       atomic.Int64
}

// memoLimit bounds the memo (serve --file reloads for as long as it
// runs): past it, items are checked without being remembered.
const memoLimit = 100_000

// itemPath is where an item's errors are found, replaced by its own.
var itemPath = field.NewPath("spec", "rules").Index(0)

// check is the errors of item i.
func (r *itemRules) check(i int, item any) field.ErrorList {
	b, err := json.Marshal(item) // map keys sorted: the same content, the same bytes
	if err != nil {
		return field.ErrorList{field.InternalError(itemPath, err)}
	}
	key := sha256.Sum256(b)
	var errs field.ErrorList
	if got, ok := r.memo.Load(key); ok {
		errs = got.(field.ErrorList)
	} else {
		errs = validation.ValidateCustomResource(itemPath, item, r.schema)
		celErrs, _ := r.cel.Validate(context.Background(), itemPath, r.structural, item, nil, celconfig.RuntimeCELCostBudget)
		errs = append(errs, celErrs...)
		if r.size.Add(1) <= memoLimit {
			r.memo.Store(key, errs)
		}
	}
	if i == 0 || len(errs) == 0 {
		return errs
	}
	out := make(field.ErrorList, len(errs))
	at := "spec.rules[" + strconv.Itoa(i) + "]"
	for j, e := range errs {
		c := *e
		if rest, ok := strings.CutPrefix(c.Field, itemPath.String()); ok {
			c.Field = at + rest
		}
		out[j] = &c
	}
	return out
}

// ruleItems is the schema of spec.rules' items, if the kind has one with
// CEL rules in it.
func ruleItems(s *structuralschema.Structural) *structuralschema.Structural {
	spec, ok := s.Properties["spec"]
	if !ok {
		return nil
	}
	rules, ok := spec.Properties["rules"]
	if !ok || rules.Items == nil || !hasRules(rules.Items) {
		return nil
	}
	return rules.Items
}

func hasRules(s *structuralschema.Structural) bool {
	if len(s.XValidations) > 0 || s.Items != nil && hasRules(s.Items) {
		return true
	}
	for _, p := range s.Properties {
		if hasRules(&p) {
			return true
		}
	}
	return s.AdditionalProperties != nil && s.AdditionalProperties.Structural != nil && hasRules(s.AdditionalProperties.Structural)
}

// stripRules removes the CEL rules of s and everything under it (s is
// a copy: the object's validator leaves them to itemRules).
func stripRules(s *structuralschema.Structural) {
	s.XValidations = nil
	if s.Items != nil {
		stripRules(s.Items)
	}
	for k, p := range s.Properties {
		stripRules(&p)
		s.Properties[k] = p
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Structural != nil {
		stripRules(s.AdditionalProperties.Structural)
	}
}

// ruleItemProps is the OpenAPI schema of spec.rules' items, if any.
func ruleItemProps(s *apiextensions.JSONSchemaProps) *apiextensions.JSONSchemaProps {
	if a := ruleItemsOf(s); a != nil {
		return a.Schema
	}
	return nil
}

// ruleItemsOf is spec.rules' items of an OpenAPI schema (nil: none).
func ruleItemsOf(s *apiextensions.JSONSchemaProps) *apiextensions.JSONSchemaPropsOrArray {
	if s == nil {
		return nil
	}
	spec, ok := s.Properties["spec"]
	if !ok {
		return nil
	}
	rules, ok := spec.Properties["rules"]
	if !ok || rules.Items == nil || rules.Items.Schema == nil {
		return nil
	}
	return rules.Items
}
