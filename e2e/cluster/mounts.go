package cluster

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// MountpointsFile lists, one a line, the folders the node agent created
// on the host as mount points of Pods' volumes (a bind mount needs an
// existing folder; the Pods see their files there, in their own mount
// namespaces). Down removes them, deepest first, when empty.
func MountpointsFile(dataDir string) string { return filepath.Join(dataDir, "mountpoints") }

func removeMountpoints(p Paths) []error {
	b, err := os.ReadFile(MountpointsFile(p.Node()))
	if err != nil {
		return nil
	}
	dirs := strings.Split(strings.TrimSpace(string(b)), "\n")
	sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
	var errs []error
	seen := map[string]bool{}
	for _, d := range dirs {
		if d == "" || seen[d] || !filepath.IsAbs(d) {
			continue
		}
		seen[d] = true
		// os.Remove refuses a folder that is not empty: only what is
		// still ours goes.
		if err := os.Remove(d); err != nil && !os.IsNotExist(err) && !strings.Contains(err.Error(), "not empty") {
			errs = append(errs, err)
		}
	}
	return errs
}
