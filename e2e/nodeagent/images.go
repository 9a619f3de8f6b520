package nodeagent

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/portcullis/portcullis/e2e/cluster"
)

// errUnknownImage: no entry of the node's image table matches.
var errUnknownImage = errors.New("unknown to this node")

// image is what a container of an image runs: where its commands are
// found, and its defaults.
type image struct {
	// root is the unpacked image tarball ("" for host executables).
	root string
	// executables maps command names to host paths (host images).
	executables map[string]string
	args        []string // inserted after the program (host images)
	entrypoint  []string
	cmd         []string
	env         []string
	workingDir  string
	user        string // USER: "uid" or "uid:gid" ("" for root)
}

// images is the node's image table; tarballs are unpacked once, on first
// use, under dir.
type images struct {
	dir     string
	entries []cluster.Image

	mu       sync.Mutex
	unpacked map[string]*image
}

func newImages(dir string, entries []cluster.Image) *images {
	return &images{dir: dir, entries: entries, unpacked: map[string]*image{}}
}

// repository is ref without its tag or digest.
func repository(ref string) string {
	if i := strings.IndexByte(ref, '@'); i >= 0 {
		ref = ref[:i]
	}
	if i := strings.LastIndexByte(ref, ':'); i > strings.LastIndexByte(ref, '/') {
		ref = ref[:i]
	}
	return ref
}

// get resolves an image reference.
func (s *images) get(ref string) (*image, error) {
	repo := repository(ref)
	for _, e := range s.entries {
		if e.Repository != repo {
			continue
		}
		if e.Tarball == "" {
			return &image{executables: e.Executables, entrypoint: e.Entrypoint, args: e.Args}, nil
		}
		return s.unpack(e.Tarball)
	}
	return nil, fmt.Errorf("image %q: %w (the node agent runs the images listed in docs/cluster.md)", ref, errUnknownImage)
}

// unpack extracts an image tarball's files (once per tarball and
// modification time) and reads its config.
func (s *images) unpack(tarPath string) (*image, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fi, err := os.Stat(tarPath)
	if err != nil {
		return nil, fmt.Errorf("image tarball: %w (run `make image`)", err)
	}
	key := fmt.Sprintf("%s@%d", tarPath, fi.ModTime().UnixNano())
	if im := s.unpacked[key]; im != nil {
		return im, nil
	}
	img, err := tarball.ImageFromPath(tarPath, nil)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	digest, err := img.Digest()
	if err != nil {
		return nil, err
	}
	root := filepath.Join(s.dir, digest.Hex[:16])
	if _, err := os.Stat(root); err != nil {
		tmp := root + ".tmp"
		os.RemoveAll(tmp)
		if err := extract(img, tmp); err != nil {
			return nil, fmt.Errorf("unpack %s: %w", tarPath, err)
		}
		if err := os.Rename(tmp, root); err != nil {
			return nil, err
		}
	}
	im := &image{root: root, entrypoint: cf.Config.Entrypoint, cmd: cf.Config.Cmd, env: cf.Config.Env, workingDir: cf.Config.WorkingDir, user: cf.Config.User}
	s.unpacked[key] = im
	return im, nil
}

// extract writes the image's regular files, folders and symlinks under
// dir (no device files; ownership is the node's).
func extract(img v1.Image, dir string) error {
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := path.Clean("/" + h.Name)
		target := filepath.Join(dir, name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, os.FileMode(h.Mode)&os.ModePerm|0o700); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode)&os.ModePerm)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			f.Close()
			if err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			if err := os.Symlink(h.Linkname, target); err != nil {
				return err
			}
		}
	}
}

// resolve is the host path of a container's command name: an absolute
// path inside the image, or a name looked up in the image's PATH (or the
// host executables of a host image).
func (im *image) resolve(name string) (string, error) {
	if im.root == "" {
		if p, ok := im.executables[path.Base(name)]; ok {
			return p, nil
		}
		return "", fmt.Errorf("command %q is not one this node runs for the image", name)
	}
	if strings.HasPrefix(name, "/") {
		p := filepath.Join(im.root, name)
		if isExecutable(p) {
			return p, nil
		}
		return "", fmt.Errorf("%s: not an executable in the image", name)
	}
	pathEnv := "/usr/local/bin:/usr/bin:/bin"
	for _, e := range im.env {
		if strings.HasPrefix(e, "PATH=") {
			pathEnv = e[len("PATH="):]
		}
	}
	for _, d := range filepath.SplitList(pathEnv) {
		p := filepath.Join(im.root, d, name)
		if isExecutable(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: not found in the image's PATH %s", name, pathEnv)
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}
