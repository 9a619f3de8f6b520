// Package fields says, for every field of the projectcontour.io API types
// that portcullis reads, whether the control plane implements it, and
// finds the fields an object sets that it does not.
//
// The Go types carry the whole upstream API so that the API server keeps
// every field (a CRD prunes what its schema lacks). A field set but not
// implemented must not be ignored: an IP allow list or a JWT policy
// ignored serves everyone what it was meant to restrict. The builder refuses such an object (SpecError, reason
// UnsupportedField), as it does any invalid one.
//
// One table (table.go) classifies every field path; a test walks the
// types and fails on a path the table lacks, so that a field added to the
// types cannot go unclassified, and the docs page docs/httpproxy-fields.md
// is rendered from the table.
package fields

import (
	"fmt"
	"reflect"
	"strings"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/apis/projectcontour/v1alpha1"
)

// Kinds of the objects whose fields are classified, as in status refs.
const (
	KindHTTPProxy                = "HTTPProxy"
	KindExtensionService         = "ExtensionService"
	KindTLSCertificateDelegation = "TLSCertificateDelegation"
)

// Support says what portcullis does with a field. The zero value is a
// refusal: a field nobody classified is never taken as implemented.
type Support struct {
	implemented bool
	// ignored is a Gateway API field the builder reads nothing of, and
	// serves the object without (gateway_table.go).
	ignored bool
	// noEffect is a field accepted with a warning that it has no effect
	// (with everything under it): Contour accepts and ignores it, and
	// ignoring it cannot serve more openly or differently than written
	// (docs/design/decisions.md, harmless fields). The builder writes the
	// warning.
	noEffect bool
	// notInContour says why a field Portcullis implements is not in
	// Contour's released API (apis/upstream_test.go lists them), and
	// what Contour has instead.
	notInContour string
	// why is the reason a field is refused or ignored; for an implemented
	// Gateway API field, what of it is not (values the builder refuses);
	// for an implemented HTTPProxy field, a note (ImplementedNote).
	why string
}

// Implemented is a field the builder translates (or validates and uses).
func Implemented() Support { return Support{implemented: true} }

// ImplementedNote is an implemented field with a note on how, shown on
// the docs page, where Portcullis differs from Contour.
func ImplementedNote(note string) Support { return Support{implemented: true, why: note} }

// Refused is a field portcullis does not implement: an object setting it
// is not served. why says what the field does and that it is missing.
func Refused(why string) Support { return Support{why: why} }

// NoEffect is a field accepted, with a warning, that has no effect where
// it is (as in Contour): why says why it cannot apply. Only for a field
// whose being ignored cannot widen access; the builder writes the warning.
func NoEffect(why string) Support { return Support{implemented: true, noEffect: true, why: why} }

// NotInContour is an implemented field that Contour's released API
// (v1.33) does not have: an object setting it does not apply with
// Contour's CRDs. note says what to use instead, if anything.
func NotInContour(note string) Support { return Support{implemented: true, notInContour: note} }

// HasNoEffect reports whether the field is accepted with no effect.
func (s Support) HasNoEffect() bool { return s.noEffect }

// IsImplemented reports whether the field is implemented.
func (s Support) IsImplemented() bool { return s.implemented }

// Why is the reason a refused or ignored field is refused or ignored;
// for an implemented Gateway API field, what values of it are refused.
func (s Support) Why() string { return s.why }

// Lookup returns the support of a field path pattern (no indices, e.g.
// "spec.routes.conditions.queryParameter") of a kind. ok is false for a
// path the table lacks.
func Lookup(kind, pattern string) (s Support, ok bool) {
	s, ok = table[kind][pattern]
	return s, ok
}

// Finding is one refused field set in an object.
type Finding struct {
	// Path names the field with its indices, e.g.
	// "spec.routes[2].conditions[1].queryParameter".
	Path string
	// Pattern is Path without indices, the table's key.
	Pattern string
	// Why is the table's reason (empty for a field the table lacks).
	Why string
}

// Message is the status message of a finding.
func (f Finding) Message() string {
	why := f.Why
	if why == "" {
		why = "a field portcullis does not know how to apply"
	}
	return fmt.Sprintf("%s: %s; the object is not served while the field is set", f.Path, why)
}

// Kinds are the kinds whose fields are classified, with their spec types.
var Kinds = []struct {
	Kind string
	Spec reflect.Type
}{
	{KindHTTPProxy, reflect.TypeFor[contourv1.HTTPProxySpec]()},
	{KindExtensionService, reflect.TypeFor[v1alpha1.ExtensionServiceSpec]()},
	{KindTLSCertificateDelegation, reflect.TypeFor[contourv1.TLSCertificateDelegationSpec]()},
}

// SpecType returns the spec type of a kind (nil for another kind).
func SpecType(kind string) reflect.Type {
	for _, k := range Kinds {
		if k.Kind == kind {
			return k.Spec
		}
	}
	return nil
}

// Row is a field path the table must classify.
type Row struct {
	Field
	Support Support
	// Known is false for a path the table lacks.
	Known bool
}

// Rows lists the field paths of a kind that the table must classify, in
// the order of the types: every path of its spec type except those under
// a refused field (refused with it: the walker never looks inside).
func Rows(kind string) []Row {
	return rows(Paths(SpecType(kind)), func(pattern string) (Support, bool) { return Lookup(kind, pattern) })
}

// rows classifies paths with lookup, leaving out the paths under a field
// that is not implemented (they go with it).
func rows(paths []Field, lookup func(pattern string) (Support, bool)) []Row {
	var out []Row
	skip := ""
	for _, f := range paths {
		if skip != "" && strings.HasPrefix(f.Pattern, skip+".") {
			continue
		}
		s, ok := lookup(f.Pattern)
		out = append(out, Row{Field: f, Support: s, Known: ok})
		skip = ""
		if !s.implemented || s.noEffect {
			skip = f.Pattern
		}
	}
	return out
}

// SetPatterns lists the path patterns of every field that spec sets,
// whatever the table says, each once, in the order first found.
func SetPatterns(spec any) []string { return setPatterns(spec, isAPIType) }

// setPatterns is SetPatterns, walking into the structs isAPI accepts.
func setPatterns(spec any, isAPI func(reflect.Type) bool) []string {
	var out []string
	seen := map[string]bool{}
	var walk func(v reflect.Value, pattern string)
	walk = func(v reflect.Value, pattern string) {
		for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
			if v.IsNil() {
				return
			}
			v = v.Elem()
		}
		switch {
		case v.Kind() == reflect.Struct && isAPI(v.Type()):
			for _, f := range apiFields(v.Type()) {
				if fv := v.FieldByIndex(f.index); !fv.IsZero() {
					pat := pattern + "." + f.name
					if !seen[pat] {
						seen[pat] = true
						out = append(out, pat)
					}
					walk(fv, pat)
				}
			}
		case v.Kind() == reflect.Slice || v.Kind() == reflect.Array:
			for i := range v.Len() {
				walk(v.Index(i), pattern)
			}
		case v.Kind() == reflect.Map:
			for _, k := range v.MapKeys() {
				walk(v.MapIndex(k), pattern)
			}
		}
	}
	walk(reflect.ValueOf(spec), "spec")
	return out
}

// Field is one field path of a kind's spec, found from its Go type.
type Field struct {
	// Pattern is the path without indices ("spec.routes.services.name").
	Pattern string
	// Type is the field's Go type.
	Type reflect.Type
}

// Paths lists every field path of a spec type (e.g. HTTPProxySpec), in
// the order of the type's fields, depth first: what the table must cover.
func Paths(spec reflect.Type) []Field {
	var out []Field
	walkType(spec, "spec", map[reflect.Type]bool{}, &out)
	return out
}

func walkType(t reflect.Type, pattern string, onPath map[reflect.Type]bool, out *[]Field) {
	t = elemType(t)
	if t.Kind() != reflect.Struct || !isAPIType(t) || onPath[t] {
		return
	}
	onPath[t] = true
	defer delete(onPath, t)
	for _, f := range apiFields(t) {
		pat := pattern + "." + f.name
		*out = append(*out, Field{Pattern: pat, Type: f.typ})
		walkType(f.typ, pat, onPath, out)
	}
}

// elemType strips pointers, slices, arrays and maps to the type of the
// values they hold.
func elemType(t reflect.Type) reflect.Type {
	for {
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
			t = t.Elem()
		default:
			return t
		}
	}
}

// apiPackage is the module of the API types: its structs are walked into,
// other structs (from Kubernetes, say) are leaves.
const apiPackage = "github.com/portcullis/portcullis/apis/"

func isAPIType(t reflect.Type) bool { return strings.HasPrefix(t.PkgPath(), apiPackage) }

// apiField is a struct field as JSON sees it.
type apiField struct {
	name  string
	index []int
	typ   reflect.Type
}

// apiFields lists the JSON fields of an API struct, embedded inline
// structs flattened, in declaration order.
func apiFields(t reflect.Type) []apiField {
	var out []apiField
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			for _, sub := range apiFields(f.Type) {
				out = append(out, apiField{name: sub.name, index: append([]int{i}, sub.index...), typ: sub.typ})
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, apiField{name: name, index: []int{i}, typ: f.Type})
	}
	return out
}
