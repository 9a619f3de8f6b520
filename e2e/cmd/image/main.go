// Command image writes the container images of Portcullis as image tarballs,
// without a Docker daemon (make image). Each image is one layer on no base:
// the static binaries under /usr/local/bin, the host's CA bundle (the
// authserver calls OIDC issuers over HTTPS), an /etc/passwd and /etc/group
// naming the nonroot user 65532 the images run as, and a writable /tmp.
// The tarballs are in the `docker save` format (a manifest.json with the
// repository tag, the config and the layer) that `docker load`, `kind load
// image-archive`, `ctr images import` and the one-machine cluster's node
// agent read.
//
//	image -bin DIR -out DIR -tag TAG
//
// DIR of -bin holds the binaries (built with CGO_ENABLED=0 by make image).
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Registry is where the images are published; the chart's default
// image.repository is Registry + "/portcullis".
const Registry = "ghcr.io/portcullis"

// nonroot is the user the images run as (distroless's nonroot user).
const nonroot = "65532"

// images are the images make image writes: the one the chart deploys (its
// three servers; the chart's containers name the binary in command) and
// the example extension server's.
var images = []struct {
	name     string
	binaries []string // the first is the entrypoint
}{
	{"portcullis", []string{"portcullis", "authserver", "extprocserver"}},
	{"basicauth-extension", []string{"basicauth-extension"}},
}

// caBundles are where the host's CA bundle may be, copied into the images.
var caBundles = []string{"/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt"}

func main() {
	binDir := flag.String("bin", "", "folder holding the static binaries")
	outDir := flag.String("out", "", "folder the image tarballs are written to (NAME.tar)")
	tag := flag.String("tag", "", "image tag (the chart's appVersion by default in make image)")
	echoserver := flag.String("echoserver", "", "also write the e2e tests' echo backend, "+testEchoServer+":TAG, from this binary (hack/kind-e2e.sh: clusters without the one-machine cluster's image table)")
	flag.Parse()
	if (*binDir == "" && *echoserver == "") || *outDir == "" || *tag == "" {
		flag.Usage()
		os.Exit(2)
	}
	if *echoserver != "" {
		// Only the echo backend's.
		if err := echoServerImage(*echoserver, *outDir, *tag); err != nil {
			fmt.Fprintln(os.Stderr, "image:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*binDir, *outDir, *tag); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

// testEchoServer is the repository of e2e/cmd/echoserver's image
// (cluster.EchoServerImage).
const testEchoServer = "portcullis.test/echoserver"

// echoServerImage writes the e2e echo backend's image, echoserver.tar.
func echoServerImage(bin, outDir, tag string) error {
	ca, err := readCABundle()
	if err != nil {
		return err
	}
	ref, err := name.NewTag(testEchoServer + ":" + tag)
	if err != nil {
		return err
	}
	img, err := build(filepath.Dir(bin), []string{filepath.Base(bin)}, ca)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	return tarball.WriteToFile(filepath.Join(outDir, "echoserver.tar"), ref, img)
}

func run(binDir, outDir, tag string) error {
	ca, err := readCABundle()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	for _, im := range images {
		ref, err := name.NewTag(Registry + "/" + im.name + ":" + tag)
		if err != nil {
			return err
		}
		img, err := build(binDir, im.binaries, ca)
		if err != nil {
			return fmt.Errorf("%s: %w", im.name, err)
		}
		out := filepath.Join(outDir, im.name+".tar")
		tmp := out + ".tmp"
		if err := tarball.WriteToFile(tmp, ref, img); err != nil {
			return fmt.Errorf("%s: %w", im.name, err)
		}
		if err := os.Rename(tmp, out); err != nil {
			return err
		}
		fmt.Printf("%s -> %s\n", ref, out)
	}
	return nil
}

func readCABundle() ([]byte, error) {
	for _, p := range caBundles {
		if b, err := os.ReadFile(p); err == nil {
			return b, nil
		}
	}
	return nil, fmt.Errorf("no CA bundle found at %v (install the ca-certificates package)", caBundles)
}

// build assembles one image: a single layer and the config.
func build(binDir string, binaries []string, ca []byte) (v1.Image, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	// A fixed time keeps the layer's digest a function of its contents.
	mtime := time.Unix(0, 0)
	dir := func(p string, mode int64) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: p + "/", Mode: mode, ModTime: mtime})
	}
	file := func(p string, mode int64, uid int, body []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: p, Mode: mode, Size: int64(len(body)), Uid: uid, Gid: uid, ModTime: mtime}); err != nil {
			return err
		}
		_, err := tw.Write(body)
		return err
	}
	for _, d := range []string{"etc", "etc/ssl", "etc/ssl/certs", "usr", "usr/local", "usr/local/bin"} {
		if err := dir(d, 0o755); err != nil {
			return nil, err
		}
	}
	if err := dir("tmp", 0o1777); err != nil {
		return nil, err
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "home/nonroot/", Mode: 0o700, Uid: 65532, Gid: 65532, ModTime: mtime}); err != nil {
		return nil, err
	}
	if err := file("etc/passwd", 0o644, 0, []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")); err != nil {
		return nil, err
	}
	if err := file("etc/group", 0o644, 0, []byte("root:x:0:\nnonroot:x:65532:\n")); err != nil {
		return nil, err
	}
	if err := file("etc/ssl/certs/ca-certificates.crt", 0o644, 0, ca); err != nil {
		return nil, err
	}
	for _, b := range binaries {
		body, err := os.ReadFile(filepath.Join(binDir, b))
		if err != nil {
			return nil, err
		}
		if err := file("usr/local/bin/"+b, 0o755, 0, body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	layerBytes := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerBytes)), nil
	})
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = runtime.GOARCH, "linux"
	cf.Created = v1.Time{Time: mtime}
	cf.Config = v1.Config{
		Entrypoint: []string{"/usr/local/bin/" + binaries[0]},
		User:       nonroot + ":" + nonroot,
		WorkingDir: "/home/nonroot",
		Env: []string{
			"PATH=/usr/local/bin:/usr/bin:/bin",
			"SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt",
		},
	}
	return mutate.ConfigFile(img, cf)
}
