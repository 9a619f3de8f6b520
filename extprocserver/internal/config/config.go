// Package config reads the extprocserver YAML file and builds the chain of
// built-in processors it describes.
package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"sigs.k8s.io/yaml"

	"github.com/portcullis/portcullis/extprocserver/processors/observe"
	"github.com/portcullis/portcullis/extprocserver/sdk"
)

// File is the whole configuration file.
type File struct {
	// Processors run in this order on every message of every stream.
	Processors []Entry `json:"processors"`
}

// Entry configures one processor: a name and one processor kind (a key of
// builtins, see Kinds) with its configuration.
type Entry struct {
	// Name shows in errors; default the processor kind and index.
	Name string
	// Kind is the processor kind, as written in YAML (e.g. "headers").
	Kind string
	// Config is the kind's configuration, as JSON.
	Config json.RawMessage
}

// Load reads and parses path. Unknown fields are errors, so typos fail at
// startup.
func Load(path string) (*File, error) {
	b, err := os.ReadFile(filepath.Clean(path)) // the operator's --config
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
// metrics of processors that have some; nil skips them. With tp, each
// processor runs in a span "processor <name>" (sdk.Traced); nil: none.
func (f *File) Build(reg prometheus.Registerer, tp trace.TracerProvider) (sdk.Processor, error) {
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
		chain = append(chain, sdk.Traced(name, p, tp))
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
	b, ok := builtins[e.Kind]
	if !ok {
		return nil, "unknown", fmt.Errorf("set one processor kind: %v", Kinds)
	}
	p, err := b(e.Config, env{metrics: metrics})
	return p, e.Kind, err
}
