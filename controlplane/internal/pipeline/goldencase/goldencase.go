// Package goldencase reads the golden cases of the pipeline, for the tests
// that run them: the golden test (internal/pipeline) and the Envoy
// validation (internal/pipeline/envoyvalidate). A case is a folder
// testdata/<case> with in.yaml, and optionally options.yaml (builder
// options), config.yaml (the control plane's configuration file) and
// system-ca.pem (the system's trust roots, as --system-ca-file reads
// them); testdata/common holds the objects every case shares.
package goldencase

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/portcullis/portcullis/controlplane/internal/builder"
	"github.com/portcullis/portcullis/controlplane/internal/config"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/pipeline"
	"github.com/portcullis/portcullis/controlplane/internal/provider/file"
)

// Dirs returns the case folders of a testdata folder, sorted.
func Dirs(testdata string) ([]string, error) {
	ins, err := filepath.Glob(filepath.Join(testdata, "*", "in.yaml"))
	if err != nil {
		return nil, err
	}
	if len(ins) == 0 {
		return nil, fmt.Errorf("no golden cases in %s", testdata)
	}
	dirs := make([]string, len(ins))
	for i, in := range ins {
		dirs[i] = filepath.Dir(in)
	}
	return dirs, nil
}

// Runnable returns the case folders whose input loads, sorted: every case
// but those whose golden (out.yaml) is a load error, which only TestGolden
// runs. A case that should load and does not then fails its test.
func Runnable(testdata string) ([]string, error) {
	dirs, err := Dirs(testdata)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range dirs {
		if !ExpectsLoadError(d) {
			out = append(out, d)
		}
	}
	return out, nil
}

// ExpectsLoadError reports whether a case's golden is the error of an
// input that does not load ("error: ..." in out.yaml).
func ExpectsLoadError(dir string) bool {
	b, err := readCaseFile(dir, "out.yaml")
	return err == nil && bytes.HasPrefix(b, []byte(LoadErrorPrefix))
}

// LoadErrorPrefix starts the golden of a case whose input does not load.
const LoadErrorPrefix = "error: "

// Load reads a case's objects with the shared ones (common, beside the
// case), and the objects of the kinds its config.yaml's extensions
// register, as `portcullis translate` does. Its error is the input's: the
// golden of such a case is the error.
func Load(dir string) (*objects.Set, error) {
	common := filepath.Join(filepath.Dir(dir), "common")
	var kinds []schema.GroupVersionKind
	if cfg, err := config.Load(filepath.Join(dir, "config.yaml")); err == nil {
		for _, k := range cfg.ExtensionKinds() {
			kinds = append(kinds, schema.GroupVersionKind{Group: k.Group, Version: k.Version, Kind: k.Kind})
		}
	}
	set, _, err := file.Load([]string{common, filepath.Join(dir, "in.yaml")}, kinds...)
	return set, err
}

// caseOptions are the per-case settings of options.yaml.
type caseOptions struct {
	Builder builder.Options `json:"builder"`
}

// Options reads a case's options.yaml and config.yaml over the defaults.
func Options(dir string) (pipeline.Options, error) {
	opts := pipeline.DefaultOptions()
	b, err := readCaseFile(dir, "options.yaml")
	switch {
	case err == nil:
		co := caseOptions{Builder: opts.Builder}
		if err := yaml.UnmarshalStrict(b, &co); err != nil {
			return opts, fmt.Errorf("options.yaml: %w", err)
		}
		opts.Builder = co.Builder
	case !errors.Is(err, fs.ErrNotExist):
		return opts, err
	}
	switch ca, err := readCaseFile(dir, "system-ca.pem"); {
	case err == nil:
		opts.Builder.SystemCA = ca
	case !errors.Is(err, fs.ErrNotExist):
		return opts, err
	}
	// config.yaml is read by the same code as `--config`.
	path := filepath.Join(dir, "config.yaml")
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return opts, nil
	}
	cfg, err := config.Load(path)
	if err != nil {
		return opts, err
	}
	opts.Builder = opts.Builder.WithConfig(cfg)
	return opts, nil
}

// readCaseFile reads a file of a case's directory, the repository's
// testdata.
func readCaseFile(dir, name string) ([]byte, error) {
	return os.ReadFile(filepath.Clean(filepath.Join(dir, name)))
}
