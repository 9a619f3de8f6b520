package pipeline_test

import (
	"fmt"
	"reflect"
	"sort"
	"time"

	yaml "go.yaml.in/yaml/v2"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// encodeModel renders the builder's model as the YAML of ir.yaml: fields
// in the order of their declaration, named as in package ir; zero values
// left out (a nil pointer is unset, but a set pointer shows, even to a
// zero value: a 0s timeout is not an unset one); durations and path kinds
// by name; PEM data as text, private keys redacted as in the Envoy output;
// origins as "Kind namespace/name".
func encodeModel(m *ir.Model) ([]byte, error) {
	c := *m
	c.Secrets = make([]*ir.Secret, len(m.Secrets))
	for i, s := range m.Secrets {
		r := *s
		if r.Key != nil {
			r.Key = []byte("[redacted]")
		}
		c.Secrets[i] = &r
	}
	return yaml.Marshal(irValue(reflect.ValueOf(&c)))
}

// pathKinds names the ir.PathMatchKind values.
var pathKinds = map[ir.PathMatchKind]string{ir.PathPrefix: "prefix", ir.PathExact: "exact", ir.PathRegex: "regex"}

// irValue turns a value of the model into what the YAML encoder writes.
func irValue(v reflect.Value) any {
	switch x := v.Interface().(type) {
	case time.Duration:
		return x.String()
	case ir.PathMatchKind:
		if n, ok := pathKinds[x]; ok {
			return n
		}
		return int(x)
	case []byte:
		return string(x)
	case objects.Ref:
		return x.String()
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		return irValue(v.Elem())
	case reflect.Struct:
		return irFields(v, yaml.MapSlice{})
	case reflect.Slice:
		out := make([]any, v.Len())
		for i := range out {
			out[i] = irValue(v.Index(i))
		}
		return out
	case reflect.Map:
		keys := v.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
		out := yaml.MapSlice{}
		for _, k := range keys {
			out = append(out, yaml.MapItem{Key: fmt.Sprint(k), Value: irValue(v.MapIndex(k))})
		}
		return out
	}
	return v.Interface()
}

// irFields appends a struct's set fields to out, those of an embedded
// struct in its place (a SecureVirtualHost's FQDN and Routes first).
func irFields(v reflect.Value, out yaml.MapSlice) yaml.MapSlice {
	t := v.Type()
	for i := range t.NumField() {
		f, fv := t.Field(i), v.Field(i)
		switch {
		case !f.IsExported():
		case f.Anonymous && f.Type.Kind() == reflect.Struct:
			out = irFields(fv, out)
		case fv.IsZero() || (fv.Kind() == reflect.Slice || fv.Kind() == reflect.Map) && fv.Len() == 0:
		default:
			out = append(out, yaml.MapItem{Key: f.Name, Value: irValue(fv)})
		}
	}
	return out
}
