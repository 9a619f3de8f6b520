// Package nodeagent is the one-machine cluster's node (package cluster): a
// virtual-kubelet node whose Pods' containers are local processes, each
// Pod in its own network namespace on the cluster's bridge, with its
// volumes bind-mounted at their mount paths in the containers' own mount
// namespaces. docs/cluster.md says what it does and does not do.
package nodeagent

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"time"

	vklog "github.com/virtual-kubelet/virtual-kubelet/log"
	vkslog "github.com/virtual-kubelet/virtual-kubelet/log/slog"
	"github.com/virtual-kubelet/virtual-kubelet/node"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"

	"github.com/portcullis/portcullis/e2e/cluster"
)

// Agent is the node agent.
type Agent struct {
	cfg      *cluster.NodeConfig
	client   kubernetes.Interface
	recorder record.EventRecorder
	images   *images
	ipam     *ipam

	mu     sync.Mutex
	pods   map[string]*podRuntime
	notify func(*corev1.Pod)

	mountMu         sync.Mutex
	mountpointsFile string

	// services lists the Services for the Pods' /etc/hosts (hosts.go).
	services corelisters.ServiceLister
	// policies enforces the NetworkPolicies' Ingress rules (netpol.go).
	policies *policies
}

// Run runs the node until ctx ends, then stops its Pods.
func Run(ctx context.Context, cfg *cluster.NodeConfig) error {
	// The library's log (info and up) on stderr, the node's log file.
	vklog.L = vkslog.FromSlog(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})))
	rc, err := clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig)
	if err != nil {
		return err
	}
	rc.QPS, rc.Burst = 50, 100
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	ipam, err := newIPAM(cfg.PodCIDR)
	if err != nil {
		return err
	}
	a := &Agent{
		cfg: cfg, client: cs,
		images:          newImages(filepath.Join(cfg.DataDir, "images"), cfg.Images),
		ipam:            ipam,
		pods:            map[string]*podRuntime{},
		mountpointsFile: cluster.MountpointsFile(cfg.DataDir),
	}
	eb := record.NewBroadcaster()
	eb.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
	defer eb.Shutdown()
	a.recorder = eb.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "kubelet", Host: cfg.NodeName})

	podFactory := informers.NewSharedInformerFactoryWithOptions(cs, time.Minute, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", cfg.NodeName).String()
	}))
	factory := informers.NewSharedInformerFactory(cs, time.Minute)
	pc, err := node.NewPodController(node.PodControllerConfig{
		PodClient:         cs.CoreV1(),
		PodInformer:       podFactory.Core().V1().Pods(),
		EventRecorder:     a.recorder,
		Provider:          a,
		ConfigMapInformer: factory.Core().V1().ConfigMaps(),
		SecretInformer:    factory.Core().V1().Secrets(),
		ServiceInformer:   factory.Core().V1().Services(),
		// The downward API needs the Pod's IP, known once its network
		// is set up: containerEnv resolves it.
		SkipDownwardAPIResolution: true,
	})
	if err != nil {
		return err
	}
	nc, err := node.NewNodeController(node.NewNaiveNodeProvider(), a.nodeObject(), cs.CoreV1().Nodes(),
		node.WithNodeEnableLeaseV1(cs.CoordinationV1().Leases(corev1.NamespaceNodeLease), node.DefaultLeaseDuration))
	if err != nil {
		return err
	}
	services := factory.Core().V1().Services()
	if err := a.watchServices(services.Informer(), services.Lister()); err != nil {
		return err
	}
	if a.policies, err = newPolicies(factory, a.recorder); err != nil {
		return err
	}
	podFactory.Start(ctx.Done())
	factory.Start(ctx.Done())
	go a.policies.run(ctx)

	srv, err := a.kubeletServer(podFactory)
	if err != nil {
		return err
	}
	go func() {
		if err := srv.ListenAndServeTLS("", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(os.Stderr, "kubelet API:", err)
		}
	}()
	defer srv.Close()

	errc := make(chan error, 2)
	go func() { errc <- nc.Run(ctx) }()
	go func() { errc <- pc.Run(ctx, 8) }()
	go a.resyncStatuses(ctx, podFactory.Core().V1().Pods().Lister())
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	a.stopAll(5 * time.Second)
	return err
}

// stopAll stops every Pod (the agent is stopping, the cluster going
// away): without their preStop hooks, which would hold the cluster's
// removal for nothing that is still served.
func (a *Agent) stopAll(grace time.Duration) {
	a.mu.Lock()
	ps := make([]*podRuntime, 0, len(a.pods))
	for _, p := range a.pods {
		ps = append(ps, p)
	}
	a.mu.Unlock()
	for _, p := range ps {
		p.stop(grace, false)
	}
	for _, p := range ps {
		select {
		case <-p.stopped:
		case <-time.After(grace + 5*time.Second):
		}
	}
}

// nodeObject is the Node: Ready, with capacity (the scheduler places
// nothing on a node without), the Pod CIDR and the kubelet API's address.
func (a *Agent) nodeObject() *corev1.Node {
	now := metav1.Now()
	cond := func(t corev1.NodeConditionType, s corev1.ConditionStatus, reason string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: s, Reason: reason, LastHeartbeatTime: now, LastTransitionTime: now}
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: a.cfg.NodeName,
			Labels: map[string]string{
				"kubernetes.io/hostname": a.cfg.NodeName,
				"kubernetes.io/os":       "linux",
				"kubernetes.io/arch":     runtime.GOARCH,
				"type":                   "portcullis-node-agent",
			},
		},
		Spec: corev1.NodeSpec{PodCIDR: a.cfg.PodCIDR, PodCIDRs: []string{a.cfg.PodCIDR}},
		Status: corev1.NodeStatus{
			Capacity:    nodeCapacity(),
			Allocatable: nodeCapacity(),
			Conditions: []corev1.NodeCondition{
				cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady"),
				cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory"),
				cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure"),
				cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID"),
				cond(corev1.NodeNetworkUnavailable, corev1.ConditionFalse, "RouteCreated"),
			},
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: a.cfg.GatewayIP},
				{Type: corev1.NodeHostName, Address: a.cfg.NodeName},
			},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: int32(a.cfg.KubeletPort)}},
			NodeInfo: corev1.NodeSystemInfo{
				OperatingSystem: "linux", Architecture: runtime.GOARCH,
				// No KubeProxyVersion (deprecated): a v1.37 kubelet leaves it
				// empty (DisableNodeKubeProxyVersion, locked on since 1.36).
				KubeletVersion:          "v1.37.1",
				ContainerRuntimeVersion: "portcullis-node-agent://1",
			},
		},
	}
}

// kubeletServer is the kubelet API the API server calls for logs
// (kubectl logs), on TLS with the cluster CA's client certificates.
func (a *Agent) kubeletServer(podFactory informers.SharedInformerFactory) (*http.Server, error) {
	cert, err := tls.LoadX509KeyPair(a.cfg.KubeletCert, a.cfg.KubeletKey)
	if err != nil {
		return nil, err
	}
	caPEM, err := os.ReadFile(a.cfg.KubeletClientCA)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	lister := podFactory.Core().V1().Pods().Lister()
	mux := http.NewServeMux()
	api.AttachPodRoutes(api.PodHandlerConfig{
		GetContainerLogs: a.containerLogs,
		GetPods:          a.GetPods,
		GetPodsFromKubernetes: func(context.Context) ([]*corev1.Pod, error) {
			return lister.List(labels.Everything())
		},
	}, mux, true)
	return &http.Server{
		Addr:              net.JoinHostPort(a.cfg.KubeletAddress, strconv.Itoa(a.cfg.KubeletPort)),
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{
			Certificates: []tls.Certificate{cert},
			ClientAuth:   tls.RequireAndVerifyClientCert,
			ClientCAs:    pool,
		},
	}, nil
}
