package harness

import (
	"fmt"
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
)

// Scheme holds the Go types the harness's clients and manifests know:
// client-go's built-in types and apiextensions/v1. Add the project's API
// types to it (e.g. in an init func of the test package) before use.
var Scheme = newScheme()

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	return s
}

// APIServer is a real kube-apiserver with its etcd, started by envtest.
type APIServer struct {
	Config         *rest.Config  // admin (system:masters)
	Client         client.Client // uses Scheme
	KubeconfigPath string        // the same admin credentials, for other processes
	AuditLogPath   string        // the audit log, when APIServerOptions.AuditLog

	env *envtest.Environment
}

var silenceCtrlLog sync.Once

// StartAPIServer starts kube-apiserver and etcd from the installed tools,
// installs the CRDs found in crdDirs (CRDDirs: ours and the Gateway API's;
// none when there are none or they are ""), and stops them when the test
// ends. Their logs are printed if the test fails.
func StartAPIServer(t testing.TB, crdDirs ...string) *APIServer {
	t.Helper()
	return StartAPIServerWith(t, APIServerOptions{}, crdDirs...)
}

// APIServerOptions change the API server's defaults.
type APIServerOptions struct {
	// EtcdMaxRequestBytes raises etcd's request size limit (1.5 MiB by
	// default, which bounds an object's size) when not zero.
	EtcdMaxRequestBytes int
	// AuditLog makes the API server log every write (create, update,
	// patch, delete) as one JSON line of audit.k8s.io/v1 Event at
	// AuditLogPath, synchronously: what a test counts writes with.
	AuditLog bool
}

// auditPolicy logs the metadata of every write once, when it completes.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  verbs: [create, update, patch, delete, deletecollection]
- level: None
`

// StartAPIServerWith is StartAPIServer with options.
func StartAPIServerWith(t testing.TB, opts APIServerOptions, crdDirs ...string) *APIServer {
	t.Helper()
	// controller-runtime complains loudly if its logger is never set.
	silenceCtrlLog.Do(func() { ctrllog.SetLogger(logr.Discard()) })

	tools := ToolPaths{KubeAPIServer: Tool(t, "kube-apiserver"), Etcd: Tool(t, "etcd")}
	logDir := t.TempDir()
	auditLog := ""
	apiLog := createLog(t, filepath.Join(logDir, "kube-apiserver.log"))
	etcdLog := createLog(t, filepath.Join(logDir, "etcd.log"))
	env := &envtest.Environment{
		Scheme:                   Scheme,
		BinaryAssetsDirectory:    filepath.Dir(tools.KubeAPIServer),
		ControlPlaneStartTimeout: time.Minute,
		ControlPlaneStopTimeout:  20 * time.Second,
		ControlPlane: envtest.ControlPlane{
			// Folders of the test rather than envtest's own, which envtest
			// deletes when it stops a process: Restart keeps etcd's data
			// and the API server's certificates.
			APIServer: &envtest.APIServer{Path: tools.KubeAPIServer, Out: apiLog, Err: apiLog, CertDir: t.TempDir()},
			Etcd:      &envtest.Etcd{Path: tools.Etcd, Out: etcdLog, Err: etcdLog, DataDir: t.TempDir()},
		},
	}
	// Watches (the control plane's) otherwise hold a stopping API server
	// past envtest's stop timeout: end them after a grace, as a restart
	// in a cluster would.
	env.ControlPlane.APIServer.Configure().Set("shutdown-watch-termination-grace-period", "2s")
	if opts.AuditLog {
		policy := filepath.Join(logDir, "audit-policy.yaml")
		if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
			t.Fatal(err)
		}
		auditLog = filepath.Join(logDir, "audit.log")
		env.ControlPlane.APIServer.Configure().Set("audit-policy-file", policy).Set("audit-log-path", auditLog).
			Set("audit-log-mode", "blocking").Set("audit-log-format", "json")
	}
	if opts.EtcdMaxRequestBytes > 0 {
		env.ControlPlane.Etcd.Configure().Set("max-request-bytes", fmt.Sprint(opts.EtcdMaxRequestBytes))
	}
	for _, dir := range crdDirs {
		if dir != "" {
			env.CRDDirectoryPaths = append(env.CRDDirectoryPaths, dir)
			env.ErrorIfCRDPathMissing = true
		}
	}

	start := time.Now()
	cfg, err := env.Start()
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stopping the API server: %v", err)
		}
		if t.Failed() {
			for _, f := range []*os.File{apiLog, etcdLog} {
				b, _ := os.ReadFile(f.Name())
				t.Logf("--- last lines of %s:\n%s", f.Name(), tail(string(b), 40))
			}
		}
	})
	if err != nil {
		t.Fatalf("starting the API server: %v", err)
	}
	t.Logf("kube-apiserver + etcd ready in %v at %s", time.Since(start).Round(time.Millisecond), cfg.Host)

	c, err := client.New(cfg, client.Options{Scheme: Scheme})
	if err != nil {
		t.Fatalf("API server client: %v", err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, env.KubeConfig, 0o600); err != nil {
		t.Fatal(err)
	}
	return &APIServer{Config: cfg, Client: c, KubeconfigPath: kubeconfig, AuditLogPath: auditLog, env: env}
}

// Restart stops the API server, then etcd, and starts etcd again, then the
// API server, on the same ports, data and certificates (clients keep their
// credentials). down is how long both stay stopped. It returns how long
// the API server did not answer, from the stop until it is healthy again.
func (a *APIServer) Restart(t testing.TB, down time.Duration) time.Duration {
	t.Helper()
	cp := &a.env.ControlPlane
	start := time.Now()
	if err := cp.APIServer.Stop(); err != nil {
		t.Fatalf("stopping the API server: %v", err)
	}
	if err := cp.Etcd.Stop(); err != nil {
		t.Fatalf("stopping etcd: %v", err)
	}
	time.Sleep(down)
	if err := cp.Etcd.Start(); err != nil {
		t.Fatalf("starting etcd again: %v", err)
	}
	if err := cp.APIServer.Start(); err != nil {
		t.Fatalf("starting the API server again: %v", err)
	}
	return time.Since(start)
}

// CRDDir returns the repository's generated CRDs folder (apis/crds),
// failing the test if it does not exist.
func CRDDir(t testing.TB) string {
	t.Helper()
	return existingDir(t, filepath.Join(RepoRoot(t), "apis", "crds"))
}

// GatewayAPICRDDir returns the folder of the Gateway API's standard-channel
// CRDs the chart installs (charts/portcullis/gateway-api-crds, copied from
// the Go module by hack/gateway-api-crds.sh), failing the test if it does
// not exist.
func GatewayAPICRDDir(t testing.TB) string {
	t.Helper()
	return existingDir(t, filepath.Join(RepoRoot(t), "charts", "portcullis", "gateway-api-crds"))
}

// CRDDirs are the CRDs of a cluster running Portcullis: ours and the
// Gateway API's, as the chart installs them.
func CRDDirs(t testing.TB) []string {
	t.Helper()
	return []string{CRDDir(t), GatewayAPICRDDir(t)}
}

func existingDir(t testing.TB, dir string) string {
	t.Helper()
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("CRDs not found at %s: run `make generate`", dir)
	}
	return dir
}

func createLog(t testing.TB, path string) *os.File {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}
