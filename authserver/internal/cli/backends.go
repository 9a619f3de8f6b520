package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strings"
	"time"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
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

// command is the backend's subcommand. The configuration comes from the
// defaults, then either --config or the flags, never both: a file merged
// with flags would leave no single place that says how a server runs.
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
				var set []string
				cmd.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
					if f.Changed && f.Name != "config" {
						set = append(set, "--"+f.Name)
					}
				})
				if len(set) > 0 {
					return fmt.Errorf("%s: set these in --config, not as flags as well", strings.Join(set, ", "))
				}
				cfg = s.defaults()
				if err := loadConfig(configPath, s.name, s.flatConfig, &cfg); err != nil {
					return err
				}
			}
			return serving.Run(cmd, func(ctx context.Context, opts serverkit.Options, logger *slog.Logger) (*serverkit.Server, error) {
				impl, err := s.build(cfg, env{ctx: ctx, registry: opts.Registry, logger: logger})
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
	cmd.Flags().StringVar(&configPath, "config", "", fmt.Sprintf("configuration file (YAML, the settings under the key %q; docs/authserver-%s.md)", s.name, s.name))
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

// loadConfig reads the configuration file of backend name into cfg, which
// holds the defaults. The file has one key, the backend's name, holding
// its settings:
//
//	htpasswd:
//	  realm: staff
//
// Decoding is strict: an unknown field is an error, so typos fail at
// start-up. With flat, a file without that key is the settings themselves.
func loadConfig(path, name string, flat bool, cfg any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	j, err := yaml.YAMLToJSON(b)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(j, &top); err != nil {
		return fmt.Errorf("%s: want a mapping with the key %q: %w", path, name, err)
	}
	settings, ok := top[name]
	switch {
	case ok && len(top) == 1:
	case ok:
		return fmt.Errorf("%s: want only the key %q, not %d keys", path, name, len(top))
	case flat && !hasBackendKey(top):
		settings = j
	default:
		return fmt.Errorf("%s: want the key %q (the backend this command runs); the keys are %v", path, name, backendNames())
	}
	d := json.NewDecoder(bytes.NewReader(settings))
	d.DisallowUnknownFields()
	if err := d.Decode(cfg); err != nil {
		return fmt.Errorf("%s: %s: %w", path, name, err)
	}
	return nil
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

func (d *duration) flag() *time.Duration { return (*time.Duration)(d) }
