package cluster

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// ErrRunning is returned by Up when a cluster already runs on the machine.
var ErrRunning = errors.New("a cluster is already running on this machine (make cluster-down removes it)")

// cl is a cluster being brought up.
type cl struct {
	cfg     Config
	paths   Paths
	pki     *pki
	started int
	exited  map[string]chan struct{} // closed when a component exits
}

// Up brings the cluster up and returns the admin kubeconfig's path. The
// components keep running after Up returns; Down removes them. On error
// Up removes what it created.
func Up(ctx context.Context, cfg Config) (kubeconfig string, err error) {
	if cfg.StateDir == "" {
		cfg.StateDir = DefaultStateDir
	}
	c := &cl{cfg: cfg, paths: Paths{Dir: cfg.StateDir}}
	for _, tool := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy"} {
		if fi, err := os.Stat(filepath.Join(cfg.ToolsBin, tool)); err != nil || fi.Mode()&0o111 == 0 {
			return "", fmt.Errorf("%s not found in %s: run `make tools`", tool, cfg.ToolsBin)
		}
	}
	if err := os.MkdirAll(c.paths.Dir, 0o755); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(LockFile, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return "", ErrRunning
	}
	// What a crashed cluster left behind goes first.
	cleanup(c.paths, cfg.ToolsBin, false)
	defer func() {
		if err != nil {
			cleanup(c.paths, cfg.ToolsBin, true)
			os.Remove(LockFile)
		}
	}()
	for _, d := range []string{c.paths.Logs(), c.paths.Pids(), c.paths.Node()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", err
		}
	}
	st := &state{}
	hostErr := setupHost(st)
	if err := writeJSON(c.paths.State(), st); err != nil {
		return "", err
	}
	if hostErr != nil {
		return "", hostErr
	}
	if err := c.certificates(); err != nil {
		return "", err
	}
	if err := c.startControlPlane(ctx); err != nil {
		return "", err
	}
	// The node agent holds the lock for the cluster's life.
	if err := c.startNode(lock); err != nil {
		return "", err
	}
	if err := c.startProxy(); err != nil {
		return "", err
	}
	if err := c.waitReady(ctx); err != nil {
		return "", err
	}
	return c.paths.Kubeconfig(), nil
}

// Down removes everything Up created: processes, network namespaces,
// links, iptables rules, the state dir.
func Down(cfg Config) error {
	if cfg.StateDir == "" {
		cfg.StateDir = DefaultStateDir
	}
	errs := cleanup(Paths{Dir: cfg.StateDir}, cfg.ToolsBin, true)
	// The node agent, which held it, is gone.
	if err := os.Remove(LockFile); err != nil && !os.IsNotExist(err) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// cleanup stops the components and Pods and undoes the host changes;
// with removeState it removes the state dir too.
func cleanup(p Paths, toolsBin string, removeState bool) []error {
	stopDaemons(p, 10*time.Second)
	var st *state
	if b, err := os.ReadFile(p.State()); err == nil {
		st = &state{}
		_ = json.Unmarshal(b, st)
	}
	errs := teardownHost(st)
	// kube-proxy's chains.
	if proxy := filepath.Join(toolsBin, "kube-proxy"); fileExists(proxy) {
		if out, err := output("iptables", "-t", "nat", "-S"); err == nil && strings.Contains(out, "KUBE-") {
			if err := run(proxy, "--cleanup", "--proxy-mode=iptables"); err != nil {
				errs = append(errs, err)
			}
		}
	}
	errs = append(errs, removeMountpoints(p)...)
	if removeState {
		if err := os.RemoveAll(p.Dir); err != nil {
			errs = append(errs, err)
		}
	} else {
		for _, d := range []string{p.Etcd(), p.PKI(), p.Node(), p.Logs(), p.State(), p.Kubeconfig(), p.NodeConfig()} {
			os.RemoveAll(d)
		}
	}
	return errs
}

func (c *cl) certificates() error {
	p, err := newPKI(c.paths.PKI())
	if err != nil {
		return err
	}
	c.pki = p
	apiserverHosts := []string{GatewayIP, firstIP(ServiceCIDR), "127.0.0.1", "localhost",
		"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}
	certs := []struct {
		name, cn string
		orgs     []string
		hosts    []string
	}{
		{"apiserver", "kube-apiserver", nil, apiserverHosts},
		{"apiserver-kubelet-client", "kube-apiserver-kubelet-client", []string{"system:masters"}, nil},
		{"admin", "portcullis-cluster-admin", []string{"system:masters"}, nil},
		{"kube-controller-manager", "system:kube-controller-manager", nil, nil},
		{"kube-scheduler", "system:kube-scheduler", nil, nil},
		{"kube-proxy", "system:kube-proxy", nil, nil},
		// The node agent watches every Secret and ConfigMap (the
		// virtual-kubelet library's informers), which the Node
		// authorizer refuses a node: it is an administrator.
		{"node", "system:node:" + NodeName, []string{"system:nodes", "system:masters"}, nil},
		{"kubelet", "system:node:" + NodeName, nil, []string{GatewayIP, NodeName}},
	}
	for _, ct := range certs {
		if err := p.issue(ct.name, ct.cn, ct.orgs, ct.hosts...); err != nil {
			return err
		}
	}
	if err := p.serviceAccountKey(); err != nil {
		return err
	}
	server := "https://" + net.JoinHostPort(GatewayIP, strconv.Itoa(APIServerPort))
	for _, n := range []string{"admin", "kube-controller-manager", "kube-scheduler", "kube-proxy", "node"} {
		path := p.path(n + ".kubeconfig")
		if n == "admin" {
			path = c.paths.Kubeconfig()
		}
		if err := p.kubeconfig(path, n, server); err != nil {
			return err
		}
	}
	return nil
}

func (c *cl) startControlPlane(ctx context.Context) error {
	bin := func(n string) string { return filepath.Join(c.cfg.ToolsBin, n) }
	pk := c.pki.path
	etcdClient, etcdPeer := freePort(), freePort()
	if etcdClient == 0 || etcdPeer == 0 {
		return errors.New("no free port for etcd")
	}
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", etcdClient)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPeer)
	err := c.daemon("etcd", bin("etcd"), []string{
		"--name=portcullis", "--data-dir=" + c.paths.Etcd(),
		"--listen-client-urls=" + etcdURL, "--advertise-client-urls=" + etcdURL,
		"--listen-peer-urls=" + peerURL, "--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=portcullis=" + peerURL,
		"--listen-metrics-urls=", "--unsafe-no-fsync=true", "--log-level=warn",
	})
	if err != nil {
		return err
	}
	err = c.daemon("kube-apiserver", bin("kube-apiserver"), []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=" + GatewayIP, "--advertise-address=" + GatewayIP,
		"--secure-port=" + strconv.Itoa(APIServerPort),
		"--service-cluster-ip-range=" + ServiceCIDR,
		"--tls-cert-file=" + pk("apiserver.crt"), "--tls-private-key-file=" + pk("apiserver.key"),
		"--client-ca-file=" + pk("ca.crt"),
		"--authorization-mode=Node,RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + pk("sa.key"),
		"--service-account-signing-key-file=" + pk("sa.key"),
		"--kubelet-client-certificate=" + pk("apiserver-kubelet-client.crt"),
		"--kubelet-client-key=" + pk("apiserver-kubelet-client.key"),
		"--kubelet-certificate-authority=" + pk("ca.crt"),
		"--kubelet-preferred-address-types=InternalIP",
		"--allow-privileged=true",
		"--cert-dir=" + filepath.Join(c.paths.Dir, "apiserver-certs"),
		"--profiling=false",
	})
	if err != nil {
		return err
	}
	if err := c.waitAPIServer(ctx); err != nil {
		return err
	}
	err = c.daemon("kube-controller-manager", bin("kube-controller-manager"), []string{
		"--kubeconfig=" + pk("kube-controller-manager.kubeconfig"),
		"--authentication-kubeconfig=" + pk("kube-controller-manager.kubeconfig"),
		"--authorization-kubeconfig=" + pk("kube-controller-manager.kubeconfig"),
		"--service-account-private-key-file=" + pk("sa.key"),
		"--root-ca-file=" + pk("ca.crt"),
		"--use-service-account-credentials=true",
		"--leader-elect=false",
		"--secure-port=0",
		"--cluster-cidr=" + PodCIDR, "--service-cluster-ip-range=" + ServiceCIDR,
		"--controllers=*",
		"--profiling=false",
	})
	if err != nil {
		return err
	}
	return c.daemon("kube-scheduler", bin("kube-scheduler"), []string{
		"--kubeconfig=" + pk("kube-scheduler.kubeconfig"),
		"--authentication-kubeconfig=" + pk("kube-scheduler.kubeconfig"),
		"--authorization-kubeconfig=" + pk("kube-scheduler.kubeconfig"),
		"--leader-elect=false",
		"--secure-port=0",
		"--profiling=false",
	})
}

func (c *cl) startNode(lock *os.File) error {
	pk := c.pki.path
	nc := NodeConfig{
		NodeName: NodeName, Kubeconfig: pk("node.kubeconfig"),
		PodCIDR: PodCIDR, GatewayIP: GatewayIP, Bridge: Bridge, ServiceCIDR: ServiceCIDR,
		DataDir: c.paths.Node(), Self: c.cfg.Self, Images: c.cfg.Images,
		KubeletAddress: GatewayIP, KubeletPort: KubeletPort,
		KubeletCert: pk("kubelet.crt"), KubeletKey: pk("kubelet.key"), KubeletClientCA: pk("ca.crt"),
	}
	if err := writeJSON(c.paths.NodeConfig(), nc); err != nil {
		return err
	}
	// fd 3 in the agent: the lock.
	return c.daemon("node", c.cfg.Self, []string{"node", "--config=" + c.paths.NodeConfig(), "--lock-fd=3"}, lock)
}

func (c *cl) startProxy() error {
	return c.daemon("kube-proxy", filepath.Join(c.cfg.ToolsBin, "kube-proxy"), []string{
		"--kubeconfig=" + c.pki.path("kube-proxy.kubeconfig"),
		"--hostname-override=" + NodeName,
		"--proxy-mode=iptables",
		"--cluster-cidr=" + PodCIDR,
		fmt.Sprintf("--healthz-bind-address=127.0.0.1:%d", freePort()),
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", freePort()),
		// Leave the host's conntrack table size alone.
		"--conntrack-max-per-core=0",
		"--profiling=false",
	})
}

// waitAPIServer waits for the API server's /readyz.
func (c *cl) waitAPIServer(ctx context.Context) error {
	hc, err := c.adminHTTP()
	if err != nil {
		return err
	}
	url := fmt.Sprintf("https://%s/readyz", net.JoinHostPort(GatewayIP, strconv.Itoa(APIServerPort)))
	return c.poll(ctx, time.Minute, "kube-apiserver", func() error {
		resp, err := hc.Get(url)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("readyz: %s", resp.Status)
		}
		return nil
	})
}

// waitReady waits for what a workload needs: the node Ready, the default
// ServiceAccount and root CA ConfigMap, and the kubernetes Service's
// ClusterIP answering from the host (kube-proxy's rules in place).
func (c *cl) waitReady(ctx context.Context) error {
	rc, err := clientcmd.BuildConfigFromFlags("", c.paths.Kubeconfig())
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	if err := c.poll(ctx, time.Minute, "node", func() error {
		n, err := cs.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				return nil
			}
		}
		return errors.New("node not Ready")
	}); err != nil {
		return err
	}
	if err := c.poll(ctx, time.Minute, "kube-controller-manager", func() error {
		if _, err := cs.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{}); err != nil {
			return err
		}
		_, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		return err
	}); err != nil {
		return err
	}
	hc, err := c.adminHTTP()
	if err != nil {
		return err
	}
	url := fmt.Sprintf("https://%s/readyz", net.JoinHostPort(firstIP(ServiceCIDR), "443"))
	return c.poll(ctx, time.Minute, "kube-proxy", func() error {
		resp, err := hc.Get(url)
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	})
}

// poll calls f until it succeeds, the timeout passes (the error names the
// component and ends with its log) or ctx ends.
func (c *cl) poll(ctx context.Context, timeout time.Duration, component string, f func() error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		err := f()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %v\n--- %s log:\n%s", component, err, component, c.logTail(component))
		case <-c.exited[component]:
			return fmt.Errorf("%s exited\n--- %s log:\n%s", component, component, c.logTail(component))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (c *cl) adminHTTP() (*http.Client, error) {
	cert, err := tls.LoadX509KeyPair(c.pki.path("admin.crt"), c.pki.path("admin.key"))
	if err != nil {
		return nil, err
	}
	return &http.Client{
		Timeout:   2 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: c.pki.ca.Pool(), Certificates: []tls.Certificate{cert}}},
	}, nil
}

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// firstIP is the first address of a CIDR (the kubernetes Service's).
func firstIP(cidr string) string {
	_, n, err := net.ParseCIDR(cidr)
	if err != nil {
		return ""
	}
	ip := n.IP.To4()
	return net.IPv4(ip[0], ip[1], ip[2], ip[3]+1).String()
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }
