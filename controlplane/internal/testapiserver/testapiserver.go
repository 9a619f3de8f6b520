// Package testapiserver starts a real kube-apiserver and etcd (envtest) for
// the tests of the packages that talk to the API server (the kubernetes
// provider, the status writer). The binaries are those `make tools`
// installs into .tools/bin ($KUBEBUILDER_ASSETS when set).
package testapiserver

import (
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// APIServer is a running API server with an admin client.
type APIServer struct {
	Config *rest.Config  // admin (system:masters)
	Client client.Client // knows Scheme
}

// Scheme knows the kinds of objects.Scheme and client-go's (RBAC for the
// tests' users, CRDs to install some later).
var Scheme = newScheme()

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	utilruntime.Must(objects.AddToScheme(s))
	return s
}

var silenceCtrlLog sync.Once

// Start starts kube-apiserver and etcd with the CRDs of crdDirs installed
// and stops them when the test ends, printing their logs if it failed.
func Start(t testing.TB, crdDirs ...string) *APIServer {
	t.Helper()
	// controller-runtime complains loudly if its logger is never set.
	silenceCtrlLog.Do(func() { ctrllog.SetLogger(logr.Discard()) })
	bin := binDir(t)
	logs := t.TempDir()
	apiLog, etcdLog := create(t, filepath.Join(logs, "kube-apiserver.log")), create(t, filepath.Join(logs, "etcd.log"))
	env := &envtest.Environment{
		Scheme:                   Scheme,
		BinaryAssetsDirectory:    bin,
		CRDDirectoryPaths:        crdDirs,
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: time.Minute,
		ControlPlaneStopTimeout:  20 * time.Second,
		ControlPlane: envtest.ControlPlane{
			APIServer: &envtest.APIServer{Path: filepath.Join(bin, "kube-apiserver"), Out: apiLog, Err: apiLog},
			Etcd:      &envtest.Etcd{Path: filepath.Join(bin, "etcd"), Out: etcdLog, Err: etcdLog},
		},
	}
	cfg, err := env.Start()
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stopping the API server: %v", err)
		}
		if t.Failed() {
			for _, f := range []*os.File{apiLog, etcdLog} {
				b, _ := os.ReadFile(f.Name())
				t.Logf("--- %s:\n%s", f.Name(), tail(b, 4000))
			}
		}
	})
	if err != nil {
		t.Fatalf("starting the API server: %v", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return &APIServer{Config: cfg, Client: c}
}

// CRDDir is the folder of our CRDs (apis/crds).
func CRDDir(t testing.TB) string { return repoDir(t, "apis", "crds") }

// GatewayAPICRDDir is the folder of the Gateway API CRDs the chart installs.
func GatewayAPICRDDir(t testing.TB) string {
	return repoDir(t, "charts", "portcullis", "gateway-api-crds")
}

// binDir is where kube-apiserver and etcd are, failing the test when they
// are not there.
func binDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		dir = repoDir(t, ".tools", "bin")
	}
	// dir is the developer's (KUBEBUILDER_ASSETS): the binaries are looked
	// up by name in it.
	bin := os.DirFS(dir)
	for _, name := range []string{"kube-apiserver", "etcd"} {
		if fi, err := fs.Stat(bin, name); err != nil || fi.Mode()&0o111 == 0 {
			t.Fatalf("%s not found in %s: run `make tools`", name, dir)
		}
	}
	return dir
}

// repoDir is a path of the repository (the nearest parent holding
// go.work), failing the test when it does not exist.
func repoDir(t testing.TB, elem ...string) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			break
		}
		if filepath.Dir(dir) == dir {
			t.Fatal("cannot find the repository root (no go.work above the working directory)")
		}
		dir = filepath.Dir(dir)
	}
	path := filepath.Join(append([]string{dir}, elem...)...)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("%s: %v (run `make tools` for .tools, `make generate` for CRDs)", path, err)
	}
	return path
}

func create(t testing.TB, path string) *os.File {
	t.Helper()
	f, err := os.Create(filepath.Clean(path))
	if err != nil {
		t.Fatal(err)
	}
	// A log file: what was written is there whatever Close says.
	t.Cleanup(func() { _ = f.Close() })
	return f
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
