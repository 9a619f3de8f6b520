package e2e

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/portcullis/portcullis/e2e/harness"
)

// TestImages runs make image into a temporary folder and checks each image
// tarball: its tag, entrypoint, a non-root user, and that
// every binary inside runs --version; and that the images the chart deploys
// by default are these, holding the commands the chart's containers run.
func TestImages(t *testing.T) {
	root := harness.RepoRoot(t)
	dir := t.TempDir()
	cmd := exec.Command("make", "--no-print-directory", "image", "IMAGES="+dir)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make image: %v\n%s", err, out)
	}
	tag := chartAppVersion(t, root)

	want := map[string]struct {
		ref      string
		binaries []string
	}{
		"portcullis.tar":          {"ghcr.io/portcullis/portcullis:" + tag, []string{"portcullis", "authserver", "extprocserver"}},
		"basicauth-extension.tar": {"ghcr.io/portcullis/basicauth-extension:" + tag, []string{"basicauth-extension"}},
	}
	// What the images hold, by reference, for the chart check below.
	contents := map[string]map[string]bool{}
	for file, w := range want {
		t.Run(file, func(t *testing.T) {
			p := filepath.Join(dir, file)
			manifest, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(p) })
			if err != nil {
				t.Fatal(err)
			}
			if len(manifest) != 1 || len(manifest[0].RepoTags) != 1 || manifest[0].RepoTags[0] != w.ref {
				t.Fatalf("image tags %+v, want one image tagged %s", manifest, w.ref)
			}
			img, err := tarball.ImageFromPath(p, nil)
			if err != nil {
				t.Fatal(err)
			}
			cf, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			entry := "/usr/local/bin/" + w.binaries[0]
			if len(cf.Config.Entrypoint) != 1 || cf.Config.Entrypoint[0] != entry {
				t.Errorf("entrypoint %q, want [%s]", cf.Config.Entrypoint, entry)
			}
			if u := strings.Split(cf.Config.User, ":")[0]; u == "" || u == "0" || u == "root" {
				t.Errorf("user %q: the image must not run as root", cf.Config.User)
			}
			if !slicesContain(cf.Config.Env, "PATH=/usr/local/bin:/usr/bin:/bin") {
				t.Errorf("env %q has no PATH with /usr/local/bin", cf.Config.Env)
			}
			files := extractImage(t, img, filepath.Join(t.TempDir(), "rootfs"))
			contents[w.ref] = files
			for _, f := range []string{"etc/passwd", "etc/ssl/certs/ca-certificates.crt", "tmp"} {
				if !files[f] {
					t.Errorf("the image has no %s", f)
				}
			}
			for _, b := range w.binaries {
				if !files["usr/local/bin/"+b] {
					t.Errorf("the image has no /usr/local/bin/%s", b)
				}
			}
		})
	}

	// The chart, with every server switched on: each container running the
	// default image runs a command that image holds.
	objs := renderChart(t, "--set", "authserver.enabled=true", "--set", "extprocserver.enabled=true")
	checked := 0
	for _, o := range objs {
		if o.GetKind() != "Deployment" {
			continue
		}
		var d appsv1.Deployment
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &d); err != nil {
			t.Fatal(err)
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			if !strings.HasPrefix(c.Image, "ghcr.io/portcullis/") {
				continue
			}
			files, ok := contents[c.Image]
			if !ok {
				t.Errorf("Deployment %s container %s: image %s is not one make image writes", d.Name, c.Name, c.Image)
				continue
			}
			if len(c.Command) == 0 || !files["usr/local/bin/"+path.Base(c.Command[0])] {
				t.Errorf("Deployment %s container %s: command %q is not in image %s", d.Name, c.Name, c.Command, c.Image)
			}
			checked++
		}
	}
	if checked < 3 {
		t.Errorf("checked %d containers of the chart's images, want the control plane's, the authserver's and the extprocserver's", checked)
	}
}

// extractImage writes the image's files under dir, runs each executable
// of /usr/local/bin with --version, and returns the paths the image holds
// (folders without a trailing slash).
func extractImage(t *testing.T, img v1.Image, dir string) map[string]bool {
	t.Helper()
	files := map[string]bool{}
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		files[strings.TrimSuffix(h.Name, "/")] = true
		if h.Typeflag != tar.TypeReg || !strings.HasPrefix(h.Name, "usr/local/bin/") {
			continue
		}
		out := filepath.Join(dir, filepath.Base(h.Name))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(out, body, 0o755); err != nil {
			t.Fatal(err)
		}
		var stdout bytes.Buffer
		cmd := exec.Command(out, "--version")
		cmd.Stdout, cmd.Stderr = &stdout, &stdout
		if err := cmd.Run(); err != nil {
			t.Errorf("%s --version: %v\n%s", h.Name, err, stdout.String())
		} else if !strings.Contains(stdout.String(), filepath.Base(h.Name)) {
			t.Errorf("%s --version printed %q, want the binary's name and version", h.Name, stdout.String())
		}
	}
	return files
}

// chartAppVersion is the chart's appVersion, its default image tag.
func chartAppVersion(t *testing.T, root string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "charts", "portcullis", "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(b, &chart); err != nil || chart.AppVersion == "" {
		t.Fatalf("Chart.yaml appVersion: %q, %v", chart.AppVersion, err)
	}
	return chart.AppVersion
}

// renderChart is helm template of the chart with the default values and
// args.
func renderChart(t *testing.T, args ...string) []*unstructured.Unstructured {
	t.Helper()
	helm := harness.Tool(t, "helm")
	chart := filepath.Join(harness.RepoRoot(t), "charts", "portcullis")
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(helm, append([]string{"template", "t", chart, "--namespace", chartNamespace, "--kube-version", "1.37.1"}, args...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm template: %v\n%s", err, stderr.String())
	}
	objs, err := decodeManifests(stdout.String())
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func slicesContain(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
