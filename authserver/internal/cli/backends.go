package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"time"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.opentelemetry.io/otel/trace"
	"sigs.k8s.io/yaml"

	"github.com/portcullis/portcullis/serverkit"
	"github.com/portcullis/portcullis/serverkit/command"
)

// backends is every authentication backend: the subcommand, the key of
// the configuration file, and how its configuration type becomes an
// Authorization server. A new backend is one entry here.
var backends = []backendDef{
	define(testserverBackend),
	define(htpasswdBackend),
	define(oidcBackend),
}

// env is what a backend may need beyond its configuration.
type env struct {
	ctx      context.Context // ends with the command: stops watches
	registry *prometheus.Registry
	logger   *slog.Logger
	tracing  trace.TracerProvider // nil: tracing is off
}

// backendSpec describes one backend with configuration type C.
type backendSpec[C any] struct {
	name                 string
	short, long, example string
	// defaults is the configuration before the file or flags.
	defaults func() C
	// flags binds flags to the configuration (nil: --config only).
	flags func(*C, *pflag.FlagSet)
	// requireConfig: the defaults alone cannot work.
	requireConfig bool
	// flatConfig accepts a file holding the settings without the
	// "<name>:" key, the older shape of this backend's file.
	flatConfig bool
	build      func(C, env) (authv3.AuthorizationServer, error)
}

// backendDef is a backendSpec with its configuration type erased.
type backendDef struct {
	name    string
	command func(*command.Serving) *cobra.Command
}

func define[C any](s backendSpec[C]) backendDef {
	return backendDef{name: s.name, command: s.command}
}

// command is the backend's subcommand. The configuration is the defaults,
// then --config, then the flags given on the command line: a flag given
// replaces the file's field (so a Deployment's extra arguments still
// apply), a flag not given leaves it.
func (s backendSpec[C]) command(serving *command.Serving) *cobra.Command {
	cfg := s.defaults()
	var configPath string
	cmd := &cobra.Command{
		Use:     s.name,
		Short:   s.short,
		Long:    s.long,
		Example: s.example,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if configPath == "" && s.requireConfig {
				return errors.New("--config is required")
			}
			if configPath != "" {
				merged, err := s.fromFile(configPath, cfg, cmd.LocalNonPersistentFlags())
				if err != nil {
					return err
				}
				cfg = merged
			}
			return serving.Run(cmd, func(ctx context.Context, opts serverkit.Options, logger *slog.Logger) (*serverkit.Server, error) {
				impl, err := s.build(cfg, env{ctx: ctx, registry: opts.Registry, logger: logger, tracing: opts.TracerProvider})
				if err != nil {
					return nil, err
				}
				return newServer(opts, logger, backend{name: s.name, impl: impl})
			})
		},
	}
	if s.flags != nil {
		s.flags(&cfg, cmd.Flags())
	}
	cmd.Flags().StringVar(&configPath, "config", "", fmt.Sprintf("configuration file (YAML): the settings under the key %q", s.name))
	return cmd
}

// backendNames are the keys a configuration file may have, sorted.
func backendNames() []string {
	var names []string
	for _, b := range backends {
		names = append(names, b.name)
	}
	sort.Strings(names)
	return names
}

// fromFile is the configuration of the file at path with the flags given
// on the command line (their values in fromFlags) laid over it.
func (s backendSpec[C]) fromFile(path string, fromFlags C, fs *pflag.FlagSet) (C, error) {
	cfg := s.defaults()
	settings, err := readConfig(path, s.name, s.flatConfig)
	if err != nil {
		return cfg, err
	}
	var given []*pflag.Flag
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Changed && f.Name != "config" {
			given = append(given, f)
		}
	})
	if len(given) > 0 {
		if settings, err = overlay(settings, fromFlags, given); err != nil {
			return cfg, err
		}
	}
	if err := decodeStrict(settings, &cfg); err != nil {
		return cfg, fmt.Errorf("%s: %s: %w", path, s.name, err)
	}
	return cfg, nil
}

// configField annotates a backend flag with the configuration field it
// sets (its JSON name), for overlay.
const configField = "portcullis.dev/config-field"

// flagField records that flag sets the configuration field field.
func flagField(fs *pflag.FlagSet, flag, field string) {
	if err := fs.SetAnnotation(flag, configField, []string{field}); err != nil {
		panic(err) // a flag name typo in this package
	}
}

// overlay replaces the fields of settings that the given flags set with
// their values in fromFlags.
func overlay(settings json.RawMessage, fromFlags any, given []*pflag.Flag) (json.RawMessage, error) {
	var fields, flagged map[string]json.RawMessage
	if err := json.Unmarshal(settings, &fields); err != nil {
		return nil, err
	}
	if fields == nil {
		fields = map[string]json.RawMessage{}
	}
	b, err := json.Marshal(fromFlags)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &flagged); err != nil {
		return nil, err
	}
	for _, f := range given {
		name := f.Annotations[configField]
		if len(name) != 1 {
			return nil, fmt.Errorf("--%s has no configuration field", f.Name)
		}
		fields[name[0]] = flagged[name[0]]
	}
	return json.Marshal(fields)
}

// loadConfig reads the configuration file of backend name into cfg, which
// holds the defaults.
func loadConfig(path, name string, flat bool, cfg any) error {
	settings, err := readConfig(path, name, flat)
	if err != nil {
		return err
	}
	if err := decodeStrict(settings, cfg); err != nil {
		return fmt.Errorf("%s: %s: %w", path, name, err)
	}
	return nil
}

// readConfig returns the settings of backend name in the configuration
// file at path. The file has one key, the backend's name, holding its
// settings:
//
//	htpasswd:
//	  realm: staff
//
// With flat, a file without that key is the settings themselves.
func readConfig(path, name string, flat bool) (json.RawMessage, error) {
	b, err := os.ReadFile(filepath.Clean(path))
	if err != nil {
		return nil, err
	}
	j, err := yaml.YAMLToJSON(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(j, &top); err != nil {
		return nil, fmt.Errorf("%s: want a mapping with the key %q: %w", path, name, err)
	}
	settings, ok := top[name]
	switch {
	case ok && len(top) == 1:
		return settings, nil
	case ok:
		return nil, fmt.Errorf("%s: want only the key %q, not %d keys", path, name, len(top))
	case flat && !hasBackendKey(top):
		return j, nil
	}
	return nil, fmt.Errorf("%s: want the key %q (the backend this command runs); the keys are %v", path, name, backendNames())
}

// decodeStrict decodes settings into cfg; an unknown field is an error, so
// typos fail at start-up.
func decodeStrict(settings json.RawMessage, cfg any) error {
	d := json.NewDecoder(bytes.NewReader(settings))
	d.DisallowUnknownFields()
	return d.Decode(cfg)
}

func hasBackendKey(top map[string]json.RawMessage) bool {
	for _, n := range backendNames() {
		if _, ok := top[n]; ok {
			return true
		}
	}
	return false
}

// duration is a time.Duration written "90s" in files, and bound to
// duration flags.
type duration time.Duration

func (d *duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration is a string such as \"90s\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = duration(v)
	return nil
}

func (d duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

func (d *duration) flag() *time.Duration { return (*time.Duration)(d) }
