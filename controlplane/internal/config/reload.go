package config

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// Active reports whether global authorization is on: set and not
// disabled.
func (g *GlobalExtAuth) Active() bool { return g != nil && !g.Disabled }

// LostSectionError is a reload refused because it would turn off a global
// protection in force without saying so: the new version lacks the
// section (an empty document, a file cut short, or the section left
// null, as "globalExtAuth:" with nothing under it is). Turning it off
// takes "disabled: true".
type LostSectionError struct {
	Source string
	// Sections are the sections in force that the new version lacks.
	Sections []string
}

func (e *LostSectionError) Error() string {
	explicit := make([]string, len(e.Sections))
	for i, s := range e.Sections {
		explicit[i] = s + ": {disabled: true}"
	}
	return fmt.Sprintf("%s: %s in force but missing (or null) in the new version: refused, keeping the last good configuration (to turn it off, write %s)",
		e.Source, strings.Join(e.Sections, " and "), strings.Join(explicit, " and "))
}

// CheckReload tells whether next may replace prev, the configuration in
// force: a global authorization or processing in force may only be
// turned off explicitly (disabled: true), never by a version that lacks
// the section. A nil prev (no configuration in force) allows anything.
func CheckReload(prev, next *Config, source string) error {
	if prev == nil {
		return nil
	}
	var lost []string
	if prev.GlobalExtAuth.Active() && next.GlobalExtAuth == nil {
		lost = append(lost, "globalExtAuth")
	}
	if p := prev.GlobalExtProc; p != nil && !p.Disabled && next.GlobalExtProc == nil {
		lost = append(lost, "globalExtProc")
	}
	if len(lost) > 0 {
		return &LostSectionError{Source: source, Sections: lost}
	}
	return nil
}

// Change is how one section of the file changed on a reload.
type Change struct {
	// Section is the section's field name (globalExtAuth, limits...).
	Section string
	// Change is added, removed, disabled or changed.
	Change string
	// Value is the new section as compact JSON (empty when removed).
	Value string
}

// Changes are the sections that differ between prev and next, in file
// order; nil prev is the empty configuration.
func Changes(prev, next *Config) []Change {
	if prev == nil {
		prev = &Config{}
	}
	pv, nv := reflect.ValueOf(prev).Elem(), reflect.ValueOf(next).Elem()
	var out []Change
	for i := range pv.NumField() {
		name, _, _ := strings.Cut(pv.Type().Field(i).Tag.Get("json"), ",")
		a, b := pv.Field(i), nv.Field(i)
		if reflect.DeepEqual(a.Interface(), b.Interface()) {
			continue
		}
		c := Change{Section: name, Change: "changed"}
		switch {
		case b.IsZero():
			c.Change = "removed"
		case disabled(b):
			c.Change = "disabled"
		case a.IsZero():
			c.Change = "added"
		}
		if c.Change != "removed" {
			// The sections are plain data: they always encode.
			j, _ := json.Marshal(b.Interface())
			c.Value = string(j)
		}
		out = append(out, c)
	}
	return out
}

// disabled reports whether v is a section that says disabled: true.
func disabled(v reflect.Value) bool {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return false
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return false
	}
	f := v.FieldByName("Disabled")
	return f.IsValid() && f.Kind() == reflect.Bool && f.Bool()
}
