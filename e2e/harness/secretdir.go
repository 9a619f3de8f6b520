package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// SecretDir is a folder laid out as Kubernetes lays out a Secret volume:
// each file is a symbolic link into ..data, itself a link to a
// directory of the current version. Write makes a new version and swaps
// ..data with a rename, atomically, as the kubelet does on a Secret update.
type SecretDir struct {
	Dir string
	t   testing.TB
	n   int
}

// NewSecretDir makes an empty SecretDir.
func NewSecretDir(t testing.TB) *SecretDir {
	return &SecretDir{Dir: t.TempDir(), t: t}
}

// Path is the path of the file name in the folder.
func (d *SecretDir) Path(name string) string { return filepath.Join(d.Dir, name) }

// Write replaces the folder's content with files, atomically.
func (d *SecretDir) Write(files map[string][]byte) {
	d.t.Helper()
	d.n++
	gen := filepath.Join(d.Dir, fmt.Sprintf("..version_%d", d.n))
	if err := os.Mkdir(gen, 0o755); err != nil {
		d.t.Fatal(err)
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(gen, name), b, 0o600); err != nil {
			d.t.Fatal(err)
		}
		if _, err := os.Lstat(d.Path(name)); err != nil {
			if err := os.Symlink(filepath.Join("..data", name), d.Path(name)); err != nil {
				d.t.Fatal(err)
			}
		}
	}
	tmp := filepath.Join(d.Dir, "..data_tmp")
	if err := os.Symlink(filepath.Base(gen), tmp); err != nil {
		d.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(d.Dir, "..data")); err != nil {
		d.t.Fatal(err)
	}
}
