package certs

import (
	"os"
	"path/filepath"
)

// WriteSecretDir replaces the files of dir as the kubelet updates a Secret
// volume, to test readers of rotated certificates: each name is a symbolic
// link into ..data, itself a link to a directory of the current version; a
// new version's directory is written, then ..data is swapped to it with a
// rename, atomically (a reader sees the old files or the new ones, never
// a mix).
//
// The version directory keeps MkdirTemp's 0700 (the kubelet's is 0755):
// its files are 0600, readable by their owner only either way.
func WriteSecretDir(dir string, files map[string][]byte) error {
	version, err := os.MkdirTemp(dir, "..version_")
	if err != nil {
		return err
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(version, name), b, 0o600); err != nil {
			return err
		}
		link := filepath.Join(dir, name)
		if _, err := os.Lstat(link); err != nil {
			if err := os.Symlink(filepath.Join("..data", name), link); err != nil {
				return err
			}
		}
	}
	tmp := filepath.Join(dir, "..data_tmp")
	if err := os.Symlink(filepath.Base(version), tmp); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, "..data"))
}
