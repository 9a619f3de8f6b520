// Package config reads the extprocserver YAML file and builds the chain of
// built-in processors it describes.
package config

import (
	"errors"
	"fmt"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/yaml"

	"github.com/portcullis/portcullis/extprocserver/processors/deny"
	"github.com/portcullis/portcullis/extprocserver/processors/headers"
	"github.com/portcullis/portcullis/extprocserver/processors/jsonredact"
	"github.com/portcullis/portcullis/extprocserver/processors/observe"
	"github.com/portcullis/portcullis/extprocserver/processors/routebyheader"
	"github.com/portcullis/portcullis/extprocserver/processors/sizelimit"
	"github.com/portcullis/portcullis/extprocserver/sdk"
)

// File is the whole configuration file.
type File struct {
	// Processors run in this order on every message of every stream.
	Processors []Entry `json:"processors"`
}

// Entry configures one processor: exactly one of the typed fields.
type Entry struct {
	// Name shows in errors; default the processor kind and index.
	Name          string                   `json:"name,omitempty"`
	Headers       *headers.Config          `json:"headers,omitempty"`
	Deny          *deny.Config             `json:"deny,omitempty"`
	JSONRedact    *jsonredact.Config       `json:"jsonRedact,omitempty"`
	NDJSONRedact  *jsonredact.NDJSONConfig `json:"ndjsonRedact,omitempty"`
	SizeLimit     *sizelimit.Config        `json:"sizeLimit,omitempty"`
	RouteByHeader *routebyheader.Config    `json:"routeByHeader,omitempty"`
	Observe       *observe.Config          `json:"observe,omitempty"`
}

// Kinds lists the processor kinds, as written in YAML.
var Kinds = []string{"headers", "deny", "jsonRedact", "ndjsonRedact", "sizeLimit", "routeByHeader", "observe"}

// Load reads and parses path. Unknown fields are errors, so typos fail at
// startup.
func Load(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// Parse parses YAML (or JSON).
func Parse(b []byte) (*File, error) {
	var f File
	if err := yaml.UnmarshalStrict(b, &f); err != nil {
		return nil, err
	}
	if len(f.Processors) == 0 {
		return nil, errors.New("processors: at least one processor is required")
	}
	return &f, nil
}

// Build validates every entry and returns the chain. reg receives the
// metrics of processors that have some; nil skips them.
func (f *File) Build(reg prometheus.Registerer) (sdk.Processor, error) {
	var (
		chain   []sdk.Processor
		errs    []error
		metrics *observe.Metrics
	)
	for i, e := range f.Processors {
		p, kind, err := e.build(func() (*observe.Metrics, error) {
			if metrics == nil && reg != nil {
				m, err := observe.NewMetrics(reg)
				if err != nil {
					return nil, err
				}
				metrics = m
			}
			return metrics, nil
		})
		name := e.Name
		if name == "" {
			name = fmt.Sprintf("%s#%d", kind, i)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("processors[%d] (%s): %w", i, name, err))
			continue
		}
		chain = append(chain, p)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if len(chain) == 1 {
		return chain[0], nil
	}
	return sdk.Chain(chain...), nil
}

func (e Entry) build(metrics func() (*observe.Metrics, error)) (sdk.Processor, string, error) {
	var (
		p     sdk.Processor
		kind  string
		err   error
		count int
	)
	if e.Headers != nil {
		count++
		kind = "headers"
		p, err = asProcessor(headers.New(*e.Headers))
	}
	if e.Deny != nil {
		count++
		kind = "deny"
		p, err = asProcessor(deny.New(*e.Deny))
	}
	if e.JSONRedact != nil {
		count++
		kind = "jsonRedact"
		p, err = asProcessor(jsonredact.New(*e.JSONRedact))
	}
	if e.NDJSONRedact != nil {
		count++
		kind = "ndjsonRedact"
		p, err = asProcessor(jsonredact.NewNDJSON(*e.NDJSONRedact))
	}
	if e.SizeLimit != nil {
		count++
		kind = "sizeLimit"
		p, err = asProcessor(sizelimit.New(*e.SizeLimit))
	}
	if e.RouteByHeader != nil {
		count++
		kind = "routeByHeader"
		p, err = asProcessor(routebyheader.New(*e.RouteByHeader))
	}
	if e.Observe != nil {
		count++
		kind = "observe"
		m, merr := metrics()
		if merr != nil {
			return nil, kind, merr
		}
		p, err = asProcessor(observe.New(*e.Observe, m))
	}
	switch count {
	case 0:
		return nil, "unknown", fmt.Errorf("set one processor kind: %v", Kinds)
	case 1:
		return p, kind, err
	}
	return nil, "unknown", fmt.Errorf("set only one processor kind per entry, not %d", count)
}

// asProcessor turns a typed constructor result into an sdk.Processor
// without the typed-nil trap.
func asProcessor[P sdk.Processor](p P, err error) (sdk.Processor, error) {
	if err != nil {
		return nil, err
	}
	return p, nil
}
