package envoyvalidate

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// envoyPath finds Envoy the way e2e/harness does: in tools/bin, tools
// being $PORTCULLIS_TOOLS, or when empty the .tools folder of the
// repository (the nearest parent of wd with go.work). Its error says how
// to install Envoy: a test that needs it fails rather than skips, so that
// a missing tool is never mistaken for a pass.
func envoyPath(tools, wd string) (string, error) {
	if tools == "" {
		for d := wd; ; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "go.work")); err == nil {
				tools = filepath.Join(d, ".tools")
				break
			}
			if filepath.Dir(d) == d {
				return "", errors.New("cannot find the repository root (no go.work above the working directory): set PORTCULLIS_TOOLS or run `make tools`")
			}
		}
	}
	// tools is the developer's ($PORTCULLIS_TOOLS): Envoy is looked up
	// by name in it.
	path := filepath.Join(tools, "bin", "envoy")
	if fi, err := fs.Stat(os.DirFS(tools), "bin/envoy"); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		return "", fmt.Errorf("envoy not found at %s: run `make tools`", path)
	}
	return path, nil
}
