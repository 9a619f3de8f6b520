package harness

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/portcullis/portcullis/e2e/cluster"
)

// KubeCluster is a one-machine cluster of package cluster, up for one test.
type KubeCluster struct {
	Config     cluster.Config
	Kubeconfig string
	REST       *rest.Config
	Clientset  kubernetes.Interface
	Client     client.Client // uses Scheme
}

var images struct {
	once sync.Once
	dir  string
	err  string
}

// Images runs make image once per test binary and returns the folder of
// its tarballs (a per-checkout folder in the system temp dir).
func Images(t testing.TB) string {
	t.Helper()
	root := RepoRoot(t)
	images.once.Do(func() {
		dir := filepath.Join(os.TempDir(), "portcullis-e2e-bin-"+shortHash(root), "images")
		cmd := exec.Command("make", "--no-print-directory", "image", "IMAGES="+dir)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			images.err = err.Error() + "\n" + string(out)
			return
		}
		images.dir = dir
	})
	if images.err != "" {
		t.Fatalf("make image: %s", images.err)
	}
	return images.dir
}

// StartCluster brings the one-machine cluster up with the node's default
// image table (make image's tarballs, Envoy from the tools, echo-basic and
// echoserver built here), waiting while another cluster runs on the
// machine, and removes it when the test ends. It needs root.
//
// With PORTCULLIS_E2E_KUBECONFIG set, the tests use that cluster instead
// (hack/kind-e2e.sh: a kind cluster with make image's images loaded, its
// Service and Pod addresses routed from the host); it is left running.
func StartCluster(t testing.TB) *KubeCluster {
	t.Helper()
	if kubeconfig := os.Getenv("PORTCULLIS_E2E_KUBECONFIG"); kubeconfig != "" {
		return connectCluster(t, kubeconfig, cluster.Config{StateDir: filepath.Join(t.TempDir(), "cluster")})
	}
	if os.Geteuid() != 0 {
		t.Fatal("the cluster creates network namespaces, a bridge and iptables rules: run the tests as root")
	}
	var toolsBin string
	for _, tool := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy", "envoy"} {
		toolsBin = filepath.Dir(Tool(t, tool))
	}
	for _, tool := range []string{"ip", "iptables", "conntrack"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found: run `make tools`", tool)
		}
	}
	silenceCtrlLog.Do(func() { ctrllog.SetLogger(logr.Discard()) })
	self := BuildBinary(t, "github.com/portcullis/portcullis/e2e/cmd/cluster")
	binDir := t.TempDir()
	for name, pkg := range map[string]string{
		"echoserver": "github.com/portcullis/portcullis/e2e/cmd/echoserver",
		"echo-basic": "sigs.k8s.io/gateway-api/conformance/echo-basic",
	} {
		if err := os.Symlink(BuildBinary(t, pkg), filepath.Join(binDir, name)); err != nil {
			t.Fatal(err)
		}
	}
	imagesDir := Images(t)
	cfg := cluster.Config{
		StateDir: filepath.Join(t.TempDir(), "cluster"),
		ToolsBin: toolsBin,
		Self:     self,
		Images:   cluster.DefaultImages(imagesDir, binDir, toolsBin, self),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	kubeconfig := UpCluster(ctx, t, cfg)
	t.Cleanup(func() {
		if t.Failed() {
			for _, c := range []string{"node", "kube-controller-manager"} {
				b, _ := os.ReadFile(filepath.Join(cfg.StateDir, "logs", c+".log"))
				t.Logf("--- %s log (last lines):\n%s", c, lastLines(string(b), 40))
			}
		}
		if err := cluster.Down(cfg); err != nil {
			t.Errorf("cluster.Down: %v", err)
		}
	})
	return connectCluster(t, kubeconfig, cfg)
}

// connectCluster makes the clients of the cluster of kubeconfig.
func connectCluster(t testing.TB, kubeconfig string, cfg cluster.Config) *KubeCluster {
	t.Helper()
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(rc, client.Options{Scheme: Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return &KubeCluster{Config: cfg, Kubeconfig: kubeconfig, REST: rc, Clientset: cs, Client: cl}
}

// UpCluster brings the cluster up, waiting up to 10 minutes while another
// one runs on the machine (another test run, or make cluster: make
// cluster-down ends it).
func UpCluster(ctx context.Context, t testing.TB, cfg cluster.Config) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Minute)
	for {
		start := time.Now()
		kubeconfig, err := cluster.Up(ctx, cfg)
		if err == nil {
			t.Logf("cluster up in %s", time.Since(start).Round(100*time.Millisecond))
			return kubeconfig
		}
		if !errors.Is(err, cluster.ErrRunning) || time.Now().After(deadline) {
			t.Fatalf("cluster.Up: %v", err)
		}
		t.Logf("another cluster runs on this machine; waiting")
		time.Sleep(5 * time.Second)
	}
}

// Helm runs the Helm CLI of the tools against the cluster, with Helm's
// own folders in the test's temp dir, and returns its output.
func (c *KubeCluster) Helm(t testing.TB, args ...string) (string, error) {
	t.Helper()
	home := filepath.Join(filepath.Dir(c.Config.StateDir), "helm")
	cmd := exec.Command(Tool(t, "helm"), append([]string{"--kubeconfig", c.Kubeconfig}, args...)...)
	cmd.Dir = RepoRoot(t)
	cmd.Env = append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
	)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
