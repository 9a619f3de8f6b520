package htpasswd

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// DefaultFilePollInterval is how often files are re-read.
const DefaultFilePollInterval = 2 * time.Second

// maxFileSize bounds an htpasswd file (a million bcrypt users is ~64 MB).
const maxFileSize = 64 << 20

// AddFile loads an htpasswd file for every realm. It fails when the file
// cannot be read; bad lines are reported and skipped.
func (s *Server) AddFile(path string) error {
	data, err := readFile(path)
	if err != nil {
		return err
	}
	s.fileSums(path, data)
	s.store.set(fileKey(path), s.fileSource(path, data))
	return nil
}

// WatchFiles re-reads the added files every interval until ctx ends and
// applies changes. Polling the content (not inotify) follows every way a
// file changes, including the symlink swap of a Kubernetes Secret volume.
// A file that cannot be read keeps its last users and is reported.
func (s *Server) WatchFiles(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = DefaultFilePollInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	failing := map[string]bool{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, path := range s.filePaths() {
			data, err := readFile(path)
			if err != nil {
				if !failing[path] {
					s.logger.Error("htpasswd file unreadable; keeping its last users", "file", path, "error", err)
					s.metrics.loadErrors.WithLabelValues(reasonRead).Inc()
				}
				failing[path] = true
				continue
			}
			if failing[path] {
				s.logger.Info("htpasswd file readable again", "file", path)
				delete(failing, path)
			}
			if s.fileSums(path, data) {
				s.store.set(fileKey(path), s.fileSource(path, data))
			}
		}
	}
}

func (s *Server) fileSource(path string, data []byte) *source {
	return &source{name: "file " + path, realm: AllRealms, data: parse(data, s.opts.AllowInsecureHashes)}
}

// fileSums records the content hash of path and reports whether it changed.
func (s *Server) fileSums(path string, data []byte) bool {
	sum := sha256.Sum256(data)
	s.filesMu.Lock()
	defer s.filesMu.Unlock()
	if s.files == nil {
		s.files = map[string][sha256.Size]byte{}
	}
	old, known := s.files[path]
	s.files[path] = sum
	return !known || old != sum
}

func (s *Server) filePaths() []string {
	s.filesMu.Lock()
	defer s.filesMu.Unlock()
	paths := make([]string, 0, len(s.files))
	for p := range s.files {
		paths = append(paths, p)
	}
	return paths
}

// fileKey sorts files before Secrets ("file:" < "secret:").
func fileKey(path string) string { return "file:" + path }

// readFile reads the file at path, an operator's --htpasswd-file, up to
// maxFileSize. It reads the file it checked: the path may be replaced
// meanwhile (a Secret volume's update, say).
func readFile(path string) ([]byte, error) {
	f, err := os.Open(filepath.Clean(path))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return nil, fmt.Errorf("%s is a directory", path)
	}
	if fi.Size() > maxFileSize {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, maxFileSize)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxFileSize+1)) // it may grow after Stat
	if err != nil {
		return nil, err
	}
	if len(b) > maxFileSize {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, maxFileSize)
	}
	return b, nil
}
