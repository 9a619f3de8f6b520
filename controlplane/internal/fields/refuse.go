package fields

import (
	"reflect"
	"strconv"
	"strings"
	"sync"
)

// Refuse returns the refused fields that spec (an object's spec, a struct
// or a pointer to one) sets, in the order of the types. A set field is one
// with a non-zero value (a nil slice is unset, an empty one is set). The
// fields under a refused field are not reported again. A kind without a
// table refuses every field.
//
// It runs for every HTTPProxy of every build (twenty thousand at scale):
// the table is compiled once per kind into a plan that follows the types,
// so that a walk reads by index only the refused fields and the
// implemented ones that hold some, and builds a path only for a finding.
func Refuse(kind string, spec any) []Finding {
	v := reflect.ValueOf(spec)
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	w := walker{path: make([]segment, 0, 8)} // deep enough for the API: one allocation
	w.walk(v, planFor(kind, v.Type()))
	return w.out
}

// plan is what a walk needs of one struct type at one place in the API:
// its fields and their support there.
type plan struct {
	fields []plannedField
}

type plannedField struct {
	name, pattern string
	// seg is the field's path segment (".name"), made once here rather
	// than on every walk past it.
	seg     string
	index   []int
	support Support
	known   bool
	// under is the plan of the struct an implemented field holds (through
	// pointers, lists and maps); nil for a refused (or unknown) field.
	under *plan
}

var plans = struct {
	sync.Mutex
	byKind map[planKey]*plan
}{byKind: map[planKey]*plan{}}

type planKey struct {
	kind string
	spec reflect.Type
}

// planFor compiles (once) the plan of a kind's spec type.
func planFor(kind string, spec reflect.Type) *plan {
	plans.Lock()
	defer plans.Unlock()
	key := planKey{kind, spec}
	if p, ok := plans.byKind[key]; ok {
		return p
	}
	p := compile(kind, spec, "spec", map[reflect.Type]bool{})
	plans.byKind[key] = p
	return p
}

// forgetPlans drops the compiled plans (tests change the table).
func forgetPlans() {
	plans.Lock()
	defer plans.Unlock()
	plans.byKind = map[planKey]*plan{}
}

func compile(kind string, t reflect.Type, pattern string, onPath map[reflect.Type]bool) *plan {
	p := &plan{}
	if onPath[t] {
		return p
	}
	onPath[t] = true
	defer delete(onPath, t)
	for _, f := range apiFields(t) {
		pf := plannedField{name: f.name, pattern: pattern + "." + f.name, seg: "." + f.name, index: f.index}
		pf.support, pf.known = Lookup(kind, pf.pattern)
		if !pf.known || !pf.support.implemented {
			p.fields = append(p.fields, pf) // a finding when set
			continue
		}
		if pf.support.noEffect {
			continue // accepted with what it holds; the builder warns
		}
		// An implemented field matters only for the refused fields it
		// holds: most (strings, numbers, structs with none) are left out
		// of the plan, and never read by a walk.
		if et := elemType(f.typ); et.Kind() == reflect.Struct && isAPIType(et) {
			if pf.under = compile(kind, et, pf.pattern, onPath); len(pf.under.fields) > 0 {
				p.fields = append(p.fields, pf)
			}
		}
	}
	return p
}

// walker collects findings; path holds the segments down to the value
// being walked (routes, [2], conditions, ...), formatted only for a
// finding.
type walker struct {
	path []segment
	out  []Finding
}

// segment is a field name, or an index (name "") or map key.
type segment struct {
	name  string
	index int
}

func (w *walker) walk(v reflect.Value, p *plan) {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Struct:
		for i := range p.fields {
			f := &p.fields[i]
			fv := v.FieldByIndex(f.index)
			if f.under != nil {
				// Implemented: walked for the refused fields it holds (a
				// zero value holds none, and its walk finds none).
				w.path = append(w.path, segment{name: f.seg})
				w.walk(fv, f.under)
				w.path = w.path[:len(w.path)-1]
				continue
			}
			if !fv.IsZero() {
				w.out = append(w.out, Finding{Path: w.pathTo(f.name), Pattern: f.pattern, Why: f.support.why})
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			w.path = append(w.path, segment{index: i})
			w.walk(v.Index(i), p)
			w.path = w.path[:len(w.path)-1]
		}
	case reflect.Map:
		for _, k := range sortedKeys(v) {
			w.path = append(w.path, segment{name: "[" + k.String() + "]"})
			w.walk(v.MapIndex(k), p)
			w.path = w.path[:len(w.path)-1]
		}
	}
}

func (w *walker) pathTo(name string) string {
	var b strings.Builder
	b.WriteString("spec")
	for _, s := range w.path {
		if s.name == "" {
			b.WriteString("[" + strconv.Itoa(s.index) + "]")
			continue
		}
		b.WriteString(s.name)
	}
	return b.String() + "." + name
}

// sortedKeys orders a map's keys (strings, in the API), so that findings
// are deterministic.
func sortedKeys(m reflect.Value) []reflect.Value {
	keys := m.MapKeys()
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j].String() < keys[j-1].String(); j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}
