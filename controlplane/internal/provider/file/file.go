// Package file reads the control plane's input objects from YAML files: the
// mode that needs no cluster. It loads files or directories (recursively,
// *.yaml, *.yml, *.json) and watches them for changes.
package file

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// Load reads every object in the given files and directories.
func Load(paths []string) (*objects.Set, []objects.Skipped, error) {
	files, err := list(paths)
	if err != nil {
		return nil, nil, err
	}
	set := &objects.Set{}
	var skipped []objects.Skipped
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return nil, nil, err
		}
		sk, err := set.Decode(fh, f)
		fh.Close()
		skipped = append(skipped, sk...)
		if err != nil {
			return nil, skipped, err
		}
	}
	set.Sort()
	return set, skipped, nil
}

// list expands directories into their YAML and JSON files, sorted.
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
	return out, nil
}

// fingerprint summarises the files' contents, to notice any change.
func fingerprint(paths []string) (string, error) {
	files, err := list(paths)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", f, len(b))
		h.Write(b)
	}
	return fmt.Sprintf("%x", h.Sum(nil)), nil
}

// Watch loads the paths now and again whenever their contents change
// (checked every interval: polling is simple and sees ConfigMap symlink
// swaps that file events miss), and calls update with each new set. A load
// that fails is logged and skipped: the last good set stays in force.
func Watch(ctx context.Context, paths []string, interval time.Duration, log *slog.Logger, update func(*objects.Set)) {
	last := ""
	check := func() {
		fp, err := fingerprint(paths)
		if err != nil {
			log.Error("reading input files", "err", err)
			return
		}
		if fp == last {
			return
		}
		set, skipped, err := Load(paths)
		if err != nil {
			log.Error("loading input files: keeping the last good configuration", "err", err)
			last = fp
			return
		}
		for _, s := range skipped {
			log.Debug("skipped document", "source", s.Source, "kind", s.Kind, "reason", s.Reason)
		}
		last = fp
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
