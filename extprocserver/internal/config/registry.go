package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/portcullis/portcullis/extprocserver/processors/deny"
	"github.com/portcullis/portcullis/extprocserver/processors/headers"
	"github.com/portcullis/portcullis/extprocserver/processors/jsonredact"
	"github.com/portcullis/portcullis/extprocserver/processors/observe"
	"github.com/portcullis/portcullis/extprocserver/processors/routebyheader"
	"github.com/portcullis/portcullis/extprocserver/processors/sizelimit"
	"github.com/portcullis/portcullis/extprocserver/sdk"
)

// env is what a built-in may need beyond its configuration.
type env struct {
	// metrics returns the processors' shared metrics (nil when the file
	// is built without a registry).
	metrics func() (*observe.Metrics, error)
}

// builtin builds one processor kind from its configuration (JSON).
type builtin func(raw json.RawMessage, e env) (sdk.Processor, error)

// builtins is every processor kind the file can name: the YAML key, and
// how its configuration type becomes a processor. A new built-in is one
// line here.
var builtins = map[string]builtin{
	"headers":       typed(headers.New),
	"deny":          typed(deny.New),
	"jsonRedact":    typed(jsonredact.New),
	"ndjsonRedact":  typed(jsonredact.NewNDJSON),
	"sizeLimit":     typed(sizelimit.New),
	"routeByHeader": typed(routebyheader.New),
	"observe": withEnv(func(c observe.Config, e env) (*observe.Processor, error) {
		m, err := e.metrics()
		if err != nil {
			return nil, err
		}
		return observe.New(c, m)
	}),
}

// Kinds lists the processor kinds, as written in YAML, sorted.
var Kinds = func() []string {
	var ks []string
	for k := range builtins {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}()

// typed adapts a constructor that needs only its configuration.
func typed[C any, P sdk.Processor](ctor func(C) (P, error)) builtin {
	return withEnv(func(c C, _ env) (P, error) { return ctor(c) })
}

// withEnv adapts a constructor: the configuration is decoded strictly (an
// unknown field is an error, so typos fail at startup).
func withEnv[C any, P sdk.Processor](ctor func(C, env) (P, error)) builtin {
	return func(raw json.RawMessage, e env) (sdk.Processor, error) {
		var c C
		d := json.NewDecoder(bytes.NewReader(raw))
		d.DisallowUnknownFields()
		if err := d.Decode(&c); err != nil {
			return nil, err
		}
		p, err := ctor(c, e)
		if err != nil {
			return nil, err // not a typed nil in the interface
		}
		return p, nil
	}
}

// UnmarshalJSON reads an entry: an optional name and exactly one processor
// kind (Build says when there is none).
func (e *Entry) UnmarshalJSON(b []byte) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return err
	}
	*e = Entry{}
	if v, ok := fields["name"]; ok {
		if err := json.Unmarshal(v, &e.Name); err != nil {
			return fmt.Errorf("name: %w", err)
		}
		delete(fields, "name")
	}
	var kinds []string
	for k := range fields {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		if _, ok := builtins[k]; !ok {
			return fmt.Errorf("unknown field %q: the processor kinds are %v", k, Kinds)
		}
	}
	if len(kinds) > 1 {
		return fmt.Errorf("set only one processor kind per entry, not %d (%v)", len(kinds), kinds)
	}
	if len(kinds) == 1 {
		e.Kind, e.Config = kinds[0], fields[kinds[0]]
	}
	return nil
}

// MarshalJSON writes an entry as it is read.
func (e Entry) MarshalJSON() ([]byte, error) {
	m := map[string]json.RawMessage{}
	if e.Name != "" {
		n, _ := json.Marshal(e.Name)
		m["name"] = n
	}
	if e.Kind != "" {
		m[e.Kind] = e.Config
	}
	return json.Marshal(m)
}
