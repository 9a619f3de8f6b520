// Package file reads the control plane's input objects from YAML files: the
// mode that needs no cluster. It loads files or directories (recursively,
// *.yaml, *.yml, *.json) and watches them for changes.
package file

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// Load reads every object in the given files and directories. Objects of
// extensionKinds (the kinds the extension servers registered) go to
// Set.Extensions; objects of other kinds Portcullis does not read are
// skipped.
func Load(paths []string, extensionKinds ...schema.GroupVersionKind) (*objects.Set, []objects.Skipped, error) {
	set, skipped, _, err := newLoader(extensionKinds).load(paths)
	return set, skipped, err
}

// loader keeps what it read of each file from one load to the next: a file
// whose content is unchanged is not parsed again and keeps its objects.
// Every object carries a resourceVersion derived from its text
// (objects.Set.Decode), by which builder.Memo tells it unchanged, in a
// changed file too (docs/design/caches.md).
type loader struct {
	files map[string]loadedFile
	// extensionKinds are the kinds the extension servers registered.
	extensionKinds []schema.GroupVersionKind
}

type loadedFile struct {
	sum     [sha256.Size]byte
	set     *objects.Set
	skipped []objects.Skipped
	err     error
}

func newLoader(extensionKinds []schema.GroupVersionKind) *loader {
	return &loader{files: map[string]loadedFile{}, extensionKinds: extensionKinds}
}

// load reads paths. changed reports whether any file changed, appeared or
// went away since the last load; err is the first file's error, in order.
func (l *loader) load(paths []string) (set *objects.Set, skipped []objects.Skipped, changed bool, err error) {
	files, err := list(paths)
	if err != nil {
		return nil, nil, true, err
	}
	next := make(map[string]loadedFile, len(files))
	set = &objects.Set{}
	for _, f := range files {
		// f is one of the operator's paths or a file below one.
		b, readErr := os.ReadFile(filepath.Clean(f))
		if readErr != nil {
			return nil, nil, true, readErr
		}
		sum := sha256.Sum256(b)
		lf, ok := l.files[f]
		if !ok || lf.sum != sum {
			changed = true
			lf = loadedFile{sum: sum, set: &objects.Set{}}
			lf.skipped, lf.err = lf.set.Decode(bytes.NewReader(b), f, l.extensionKinds...)
		}
		next[f] = lf
		set.Add(lf.set)
		skipped = append(skipped, lf.skipped...)
		if lf.err != nil && err == nil {
			err = lf.err
		}
	}
	changed = changed || len(next) != len(l.files)
	l.files = next
	if err != nil {
		return nil, skipped, changed, err
	}
	set.Sort()
	return set, skipped, changed, nil
}

// Files returns the YAML and JSON files the paths name, as Load reads
// them; a path that does not exist is an error.
func Files(paths []string) ([]string, error) { return list(paths) }

// list expands directories into their YAML and JSON files, sorted, each
// once (-f dir -f dir/a.yaml names a.yaml twice).
func list(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !info.IsDir() {
			out = append(out, p)
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				// Skip hidden directories, like Kubernetes' ..data of
				// mounted ConfigMaps (the files are reached through the
				// symlinks beside it).
				if path != p && strings.HasPrefix(d.Name(), ".") {
					return filepath.SkipDir
				}
				return nil
			}
			switch strings.ToLower(filepath.Ext(path)) {
			case ".yaml", ".yml", ".json":
				out = append(out, path)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	sort.Strings(out)
	return slices.Compact(out), nil
}

// Watch loads the paths now and again whenever their contents change
// (checked every interval: polling is simple and sees ConfigMap symlink
// swaps that file events miss), and calls update with each new set. A load
// that fails is logged and skipped: the last good set stays in force.
// extensionKinds are as for Load.
func Watch(ctx context.Context, paths []string, interval time.Duration, log *slog.Logger, update func(*objects.Set), extensionKinds ...schema.GroupVersionKind) {
	l := newLoader(extensionKinds)
	first := true
	check := func() {
		set, skipped, changed, err := l.load(paths)
		if !changed && !first {
			return
		}
		first = false
		if err != nil {
			log.Error("loading input files: keeping the last good configuration", "err", err)
			return
		}
		for _, s := range skipped {
			if s.Refused {
				// Meant for portcullis (objects.Skipped): say it louder.
				log.Warn("document not served", "source", s.Source, "kind", s.Kind, "reason", s.Reason)
				continue
			}
			log.Debug("skipped document", "source", s.Source, "kind", s.Kind, "reason", s.Reason)
		}
		update(set)
	}
	check()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			check()
		}
	}
}
