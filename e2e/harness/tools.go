package harness

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// ToolPaths are the real components installed by hack/install-tools.sh.
type ToolPaths struct {
	Envoy         string
	KubeAPIServer string
	Etcd          string
}

// Tools returns the paths of envoy, kube-apiserver and etcd, failing the
// test if any of them is missing.
func Tools(t testing.TB) ToolPaths {
	t.Helper()
	return ToolPaths{
		Envoy:         Tool(t, "envoy"),
		KubeAPIServer: Tool(t, "kube-apiserver"),
		Etcd:          Tool(t, "etcd"),
	}
}

// Tool returns the path of one installed tool, $PORTCULLIS_TOOLS/bin/NAME
// or else <repo>/.tools/bin/NAME, failing the test if it is not there.
func Tool(t testing.TB, name string) string {
	t.Helper()
	dir := os.Getenv("PORTCULLIS_TOOLS")
	if dir == "" {
		dir = filepath.Join(RepoRoot(t), ".tools")
	}
	path := filepath.Join(dir, "bin", name)
	if fi, err := os.Stat(path); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		t.Fatalf("%s not found at %s: run `make tools`", name, path)
	}
	return path
}

var repoRoot struct {
	once sync.Once
	dir  string
}

// RepoRoot returns the repository root: the nearest parent of the working
// directory that holds go.work.
func RepoRoot(t testing.TB) string {
	t.Helper()
	repoRoot.once.Do(func() {
		dir, err := os.Getwd()
		if err != nil {
			return
		}
		for {
			if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
				repoRoot.dir = dir
				return
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				return
			}
			dir = parent
		}
	})
	if repoRoot.dir == "" {
		t.Fatalf("cannot find the repository root (no go.work above the working directory)")
	}
	return repoRoot.dir
}
