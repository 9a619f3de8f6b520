package pipeline_test

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/apis/projectcontour/v1alpha1"
	"github.com/portcullis/portcullis/controlplane/internal/builder"
	"github.com/portcullis/portcullis/controlplane/internal/fields"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/provider/file"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

// TestEveryFieldIsRefusedOrHasAGolden walks every field path of the API
// types the table classifies (from the types, not from the table) and, for
// each, builds an object that sets it:
//
//   - a Refused field must make the object invalid with SpecError /
//     UnsupportedField naming the field's path: never Valid with the field
//     ignored;
//   - an Implemented field must not be refused, and must be set in at least
//     one golden input (testdata/*/in.yaml): every implemented field has a
//     golden that shows what it becomes.
func TestEveryFieldIsRefusedOrHasAGolden(t *testing.T) {
	inGoldens := goldenFieldPatterns(t)
	for _, k := range fields.Kinds {
		types := map[string]reflect.Type{}
		for _, f := range fields.Paths(k.Spec) {
			types[f.Pattern] = f.Type
		}
		for _, r := range fields.Rows(k.Kind) {
			t.Run(k.Kind+"/"+r.Pattern, func(t *testing.T) {
				path, spec := specSetting(t, k.Spec, r.Pattern, types)
				st := buildOne(t, k.Kind, spec)
				named := false
				for _, p := range st.Errors {
					if p.Reason == status.ReasonUnsupportedField && p.Type == contourv1.ConditionTypeSpecError && strings.HasPrefix(p.Message, path+": ") {
						named = true
					}
				}
				switch {
				case !r.Known || !r.Support.IsImplemented():
					if !named || st.Valid() {
						t.Errorf("%s set: valid %v, errors %+v; want an UnsupportedField error naming %s", path, st.Valid(), st.Errors, path)
					}
				case named:
					t.Errorf("%s is implemented, but refused: %+v", path, st.Errors)
				case !inGoldens[k.Kind][r.Pattern]:
					t.Errorf("%s is implemented but no golden input sets it: add it to a testdata/<case>/in.yaml", r.Pattern)
				}
			})
		}
	}
}

// specSetting returns a spec of type specType (as a pointer) that sets the
// field of pattern to a plausible non-zero value, through one element of
// every list on the way, and that field's path.
func specSetting(t *testing.T, specType reflect.Type, pattern string, types map[string]reflect.Type) (string, any) {
	t.Helper()
	segs := strings.Split(pattern, ".")[1:]
	v := nonZero(types[pattern])
	path := pattern
	for i := len(segs) - 1; i >= 0; i-- {
		if i < len(segs)-1 {
			if k := types["spec."+strings.Join(segs[:i+1], ".")].Kind(); k == reflect.Slice || k == reflect.Array {
				v = []any{v}
				// The path's index is [0] after this segment.
				prefix := "spec." + strings.Join(segs[:i+1], ".")
				path = prefix + "[0]" + strings.TrimPrefix(path, prefix)
			}
		}
		v = map[string]any{segs[i]: v}
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	spec := reflect.New(specType)
	if err := json.Unmarshal(b, spec.Interface()); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return path, spec.Interface()
}

// nonZero is a plausible non-zero JSON value of Go type t: enough to set
// the field (a struct gets its first field set).
func nonZero(t reflect.Type) any {
	v := reflect.New(t).Elem()
	fill(v)
	return v.Interface()
}

func fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem())
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0))
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k)
		fill(e)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i))
				return
			}
		}
	}
}

// buildOne builds an object of kind with spec (a pointer to its spec type)
// alone and returns its findings. The control plane's class is the one
// fill gives ingressClassName.
func buildOne(t *testing.T, kind string, spec any) *status.Object {
	t.Helper()
	meta := metav1.ObjectMeta{Namespace: "default", Name: "fields", Generation: 1}
	set := &objects.Set{}
	switch s := spec.(type) {
	case *contourv1.HTTPProxySpec:
		set.HTTPProxies = append(set.HTTPProxies, &contourv1.HTTPProxy{ObjectMeta: meta, Spec: *s})
	case *v1alpha1.ExtensionServiceSpec:
		set.ExtensionServices = append(set.ExtensionServices, &v1alpha1.ExtensionService{ObjectMeta: meta, Spec: *s})
	case *contourv1.TLSCertificateDelegationSpec:
		set.Delegations = append(set.Delegations, &contourv1.TLSCertificateDelegation{ObjectMeta: meta, Spec: *s})
	default:
		t.Fatalf("no object of kind %s for %T", kind, spec)
	}
	ref := objects.Ref{Kind: kind, Namespace: meta.Namespace, Name: meta.Name}
	for _, o := range builder.Build(set, builder.Options{IngressClassName: "x"}).Status {
		if o.Ref == ref {
			return o
		}
	}
	t.Fatalf("no status for %s", ref)
	return nil
}

// goldenFieldPatterns collects, by kind, the field patterns that the golden
// inputs set.
func goldenFieldPatterns(t *testing.T) map[string]map[string]bool {
	t.Helper()
	ins, err := filepath.Glob("testdata/*/in.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]bool{}
	add := func(kind string, spec any) {
		if out[kind] == nil {
			out[kind] = map[string]bool{}
		}
		for _, p := range fields.SetPatterns(spec) {
			out[kind][p] = true
		}
	}
	for _, in := range append(ins, "testdata/common") {
		set, _, err := file.Load([]string{in})
		if err != nil {
			continue // a case of a file that cannot be read
		}
		for _, p := range set.HTTPProxies {
			add(fields.KindHTTPProxy, p.Spec)
		}
		for _, e := range set.ExtensionServices {
			add(fields.KindExtensionService, e.Spec)
		}
		for _, d := range set.Delegations {
			add(fields.KindTLSCertificateDelegation, d.Spec)
		}
	}
	return out
}
