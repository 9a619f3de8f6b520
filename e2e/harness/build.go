package harness

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sync"
	"testing"
)

type build struct {
	once sync.Once
	path string
	err  string
}

var builds struct {
	sync.Mutex
	m map[string]*build
}

// BuildBinary builds the main package pkgPath of the workspace (for example
// "github.com/portcullis/portcullis/controlplane/cmd/portcullis") once per
// test binary and returns the executable's path. It runs `go build` from the
// repository root so go.work applies. A failed build fails every test that
// asks for it.
//
// Executables go to a per-checkout, per-package folder in the system temp
// dir and keep the package's base name; each is replaced atomically, so
// concurrent test binaries and running copies don't clash.
func BuildBinary(t testing.TB, pkgPath string) string {
	t.Helper()
	root := RepoRoot(t)
	builds.Lock()
	if builds.m == nil {
		builds.m = map[string]*build{}
	}
	b := builds.m[pkgPath]
	if b == nil {
		b = &build{}
		builds.m[pkgPath] = b
	}
	builds.Unlock()

	b.once.Do(func() {
		dir := filepath.Join(os.TempDir(), "portcullis-e2e-bin-"+shortHash(root), shortHash(pkgPath))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.err = err.Error()
			return
		}
		out := filepath.Join(dir, path.Base(pkgPath))
		tmp, err := os.CreateTemp(dir, path.Base(pkgPath)+".tmp-*")
		if err != nil {
			b.err = err.Error()
			return
		}
		tmp.Close()
		cmd := exec.Command("go", "build", "-o", tmp.Name(), pkgPath)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "GOWORK="+filepath.Join(root, "go.work"))
		if msg, err := cmd.CombinedOutput(); err != nil {
			os.Remove(tmp.Name())
			b.err = err.Error() + "\n" + string(msg)
			return
		}
		if err := os.Rename(tmp.Name(), out); err != nil {
			b.err = err.Error()
			return
		}
		b.path = out
	})
	if b.err != "" {
		t.Fatalf("go build %s: %s", pkgPath, b.err)
	}
	return b.path
}

func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:4])
}
