package harness

import (
	"path/filepath"
	"testing"

	"github.com/portcullis/portcullis/serverkit/certs"
)

// SecretDir is a folder laid out as Kubernetes lays out a Secret volume:
// each file is a symbolic link into ..data, itself a link to a
// directory of the current version. Write makes a new version and swaps
// ..data with a rename, atomically, as the kubelet does on a Secret update
// (certs.WriteSecretDir).
type SecretDir struct {
	Dir string
	t   testing.TB
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
	if err := certs.WriteSecretDir(d.Dir, files); err != nil {
		d.t.Fatal(err)
	}
}
