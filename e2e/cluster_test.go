package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/portcullis/portcullis/e2e/cluster"
	"github.com/portcullis/portcullis/e2e/harness"
)

const (
	clusterNS  = "cluster-e2e"
	shellImage = "portcullis.test/shell"
)

// TestCluster brings the one-machine cluster up (make cluster's), runs a
// Deployment of the echoserver behind a Service, reaches its ClusterIP from
// the host and from a Pod, checks env (downward API, ConfigMap and Secret
// keys), volumes, the service account token, logs, restarts, an image
// tarball of make image, an unknown image, NetworkPolicies' Ingress rules,
// namespace deletion, and that Down leaves nothing behind.
func TestCluster(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("the cluster creates network namespaces, a bridge and iptables rules: run the tests as root")
	}
	var toolsBin string
	for _, tool := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy"} {
		toolsBin = filepath.Dir(harness.Tool(t, tool))
	}
	for _, tool := range []string{"ip", "iptables", "conntrack", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found: run `make tools`", tool)
		}
	}
	self := harness.BuildBinary(t, "github.com/portcullis/portcullis/e2e/cmd/cluster")
	echo := harness.BuildBinary(t, "github.com/portcullis/portcullis/e2e/cmd/echoserver")
	imagesDir := t.TempDir()
	mk := exec.Command("make", "--no-print-directory", "image", "IMAGES="+imagesDir)
	mk.Dir = harness.RepoRoot(t)
	if out, err := mk.CombinedOutput(); err != nil {
		t.Fatalf("make image: %v\n%s", err, out)
	}
	tag := chartAppVersion(t, harness.RepoRoot(t))

	cfg := cluster.Config{
		StateDir: filepath.Join(t.TempDir(), "cluster"),
		ToolsBin: toolsBin,
		Self:     self,
		Images: []cluster.Image{
			{Repository: "ghcr.io/portcullis/portcullis", Tarball: filepath.Join(imagesDir, "portcullis.tar")},
			{Repository: cluster.EchoServerImage, Executables: map[string]string{"echoserver": echo}, Entrypoint: []string{"echoserver"}},
			{Repository: shellImage, Executables: map[string]string{"sh": "/bin/sh"}, Entrypoint: []string{"sh"}},
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	kubeconfig := upCluster(ctx, t, cfg)
	down := func() {
		if err := cluster.Down(cfg); err != nil {
			t.Errorf("cluster.Down: %v", err)
		}
	}
	downed := false
	t.Cleanup(func() {
		if !downed {
			if t.Failed() {
				for _, c := range []string{"node", "kube-controller-manager", "kube-proxy"} {
					b, _ := os.ReadFile(filepath.Join(cfg.StateDir, "logs", c+".log"))
					t.Logf("--- %s log:\n%s", c, tail(string(b), 40))
				}
			}
			down()
		}
	})
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}

	create := func(obj interface{ GetName() string }, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("create %s: %v", obj.GetName(), err)
		}
	}
	create(cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: clusterNS}}, metav1.CreateOptions{}))
	waitFor(t, time.Minute, "the namespace's default ServiceAccount", func() error {
		_, err := cs.CoreV1().ServiceAccounts(clusterNS).Get(ctx, "default", metav1.GetOptions{})
		return err
	})
	create(cs.CoreV1().ConfigMaps(clusterNS).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "greeting"},
		Data: map[string]string{"greeting": "hello-from-a-configmap"}}, metav1.CreateOptions{}))
	create(cs.CoreV1().Secrets(clusterNS).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "secret"},
		Data: map[string][]byte{"secret": []byte("s3cret")}}, metav1.CreateOptions{}))
	create(cs.CoreV1().Services(clusterNS).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "echo"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "echo"},
			Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}}}, metav1.CreateOptions{}))
	create(cs.AppsV1().Deployments(clusterNS).Create(ctx, echoDeployment(), metav1.CreateOptions{}))

	// Deployment -> ReplicaSet -> Pods scheduled, started, Ready.
	waitFor(t, 2*time.Minute, "the echo Deployment's 2 available replicas", func() error {
		d, err := cs.AppsV1().Deployments(clusterNS).Get(ctx, "echo", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if d.Status.AvailableReplicas != 2 {
			return fmt.Errorf("%d available", d.Status.AvailableReplicas)
		}
		return nil
	})
	pods, err := cs.CoreV1().Pods(clusterNS).List(ctx, metav1.ListOptions{LabelSelector: "app=echo"})
	if err != nil {
		t.Fatal(err)
	}
	podIPs := map[string]string{} // name -> IP
	for _, p := range pods.Items {
		if p.Status.PodIP == "" || len(p.Status.PodIPs) != 1 || p.Status.PodIPs[0].IP != p.Status.PodIP {
			t.Errorf("pod %s: podIP %q, podIPs %v: want both", p.Name, p.Status.PodIP, p.Status.PodIPs)
		}
		podIPs[p.Name] = p.Status.PodIP
	}
	waitFor(t, time.Minute, "the echo Service's EndpointSlice with 2 ready endpoints", func() error {
		slices, err := cs.DiscoveryV1().EndpointSlices(clusterNS).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=echo"})
		if err != nil {
			return err
		}
		ready := 0
		for _, s := range slices.Items {
			for _, e := range s.Endpoints {
				if e.Conditions.Ready != nil && *e.Conditions.Ready {
					ready++
				}
			}
		}
		if ready != 2 {
			return fmt.Errorf("%d ready endpoints", ready)
		}
		return nil
	})
	svc, err := cs.CoreV1().Services(clusterNS).Get(ctx, "echo", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// A ClusterIP of no Service (as a Service's before kube-proxy has
	// translated it) is refused at once, not sent out of the machine.
	svcs, err := cs.CoreV1().Services("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	for _, s := range svcs.Items {
		used[s.Spec.ClusterIP] = true
	}
	unused := "10.214.0.254"
	for i := 254; used[unused]; i-- {
		unused = fmt.Sprintf("10.214.0.%d", i-1)
	}
	if conn, err := net.DialTimeout("tcp", net.JoinHostPort(unused, "80"), 5*time.Second); err == nil {
		conn.Close()
		t.Errorf("%s:80, a ClusterIP of no Service, accepted a connection", unused)
	} else if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("%s:80, a ClusterIP of no Service: %v, want connection refused", unused, err)
	}

	// The ClusterIP from the host reaches both Pods; each answers with
	// its name and IP from the downward API ($(POD_NAME)/$(POD_IP)).
	seen := map[string]bool{}
	waitFor(t, time.Minute, "answers of both echo Pods through the ClusterIP from the host", func() error {
		var got struct{ Name string }
		if err := getJSON("http://"+svc.Spec.ClusterIP+"/from-host", &got); err != nil {
			return err
		}
		name, ip, _ := strings.Cut(got.Name, "/")
		if want, ok := podIPs[name]; !ok || want != ip {
			return permanent(fmt.Errorf("answer from %q: want <pod name>/<its IP> of %v", got.Name, podIPs))
		}
		seen[name] = true
		if len(seen) < 2 {
			return fmt.Errorf("answers from %v only", seen)
		}
		return nil
	})

	// A Pod's view: env from the downward API, a ConfigMap and a Secret;
	// volumes at their mount paths; the service account token accepted by
	// the API server; the ClusterIP of the echo Service and its logs.
	client := shellPod("client", corev1.RestartPolicyNever, `set -e
echo "ip=$POD_IP env=$GREETING/$SECRET"
echo "files=$(cat /etc/cluster-e2e/config/greeting)/$(cat /etc/cluster-e2e/secret/secret)"
sa=/var/run/secrets/kubernetes.io/serviceaccount
echo "namespace=$(cat $sa/namespace)"
curl -sf --max-time 5 http://$ECHO_SERVICE_HOST/from-pod; echo
curl -sf --max-time 5 http://echo.$(cat $sa/namespace).svc.cluster.local/by-name; echo
curl -sf --max-time 5 http://echo/by-short-name; echo
curl -sf --max-time 5 --cacert $sa/ca.crt -H "Authorization: Bearer $(cat $sa/token)" -H 'Content-Type: application/json' \
  -X POST -d '{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}' \
  https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT/apis/authentication.k8s.io/v1/selfsubjectreviews; echo
`)
	c := &client.Spec.Containers[0]
	c.Env = append(c.Env,
		corev1.EnvVar{Name: "GREETING", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "greeting"}, Key: "greeting"}}},
		corev1.EnvVar{Name: "SECRET", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "secret"}, Key: "secret"}}},
	)
	c.VolumeMounts = []corev1.VolumeMount{{Name: "config", MountPath: "/etc/cluster-e2e/config"}, {Name: "secret", MountPath: "/etc/cluster-e2e/secret", ReadOnly: true}}
	client.Spec.Volumes = []corev1.Volume{
		{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "greeting"}}}},
		{Name: "secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "secret"}}},
	}
	create(cs.CoreV1().Pods(clusterNS).Create(ctx, client, metav1.CreateOptions{}))
	// A Pod from the image tarball of make image.
	version := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "version"}, Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
		Containers: []corev1.Container{{Name: "extprocserver", Image: "ghcr.io/portcullis/portcullis:" + tag, Command: []string{"extprocserver"}, Args: []string{"--version"}}}}}
	create(cs.CoreV1().Pods(clusterNS).Create(ctx, version, metav1.CreateOptions{}))
	// Init containers run first, in order, sharing the Pod's volumes; a
	// failed one of a Pod that never restarts fails it.
	initPod := shellPod("init", corev1.RestartPolicyNever, "cat /cluster-e2e-init/msg")
	initPod.Spec.Volumes = []corev1.Volume{{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	initPod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "work", MountPath: "/cluster-e2e-init"}}
	for i, script := range []string{"echo first > /cluster-e2e-init/msg", "echo second >> /cluster-e2e-init/msg"} {
		initPod.Spec.InitContainers = append(initPod.Spec.InitContainers, corev1.Container{
			Name: fmt.Sprintf("init-%d", i), Image: shellImage, Command: []string{"sh", "-c", script},
			VolumeMounts: initPod.Spec.Containers[0].VolumeMounts})
	}
	create(cs.CoreV1().Pods(clusterNS).Create(ctx, initPod, metav1.CreateOptions{}))
	initFails := shellPod("init-fails", corev1.RestartPolicyNever, "echo never runs")
	initFails.Spec.InitContainers = []corev1.Container{{Name: "init", Image: shellImage, Command: []string{"sh", "-c", "exit 4"}}}
	create(cs.CoreV1().Pods(clusterNS).Create(ctx, initFails, metav1.CreateOptions{}))
	// A container that fails is restarted (after the kubelet's 10 s back-off).
	create(cs.CoreV1().Pods(clusterNS).Create(ctx, shellPod("crash", corev1.RestartPolicyAlways, "echo crashing; exit 3"), metav1.CreateOptions{}))
	// An image the node does not know: an event and a waiting container,
	// not a hang.
	unknown := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "unknown"}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "c", Image: "example.invalid/nothing:1"}}}}
	create(cs.CoreV1().Pods(clusterNS).Create(ctx, unknown, metav1.CreateOptions{}))
	// securityContext: a user's credentials, every capability dropped,
	// no_new_privs; root with one capability dropped and / read-only;
	// runAsNonRoot of a root image refused.
	secure := shellPod("secure", corev1.RestartPolicyNever, `echo "ids=$(id -u)/$(id -g)/$(id -G)"; grep -E '^(CapEff|CapBnd|NoNewPrivs):' /proc/self/status`)
	secure.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532),
		RunAsGroup: ptr.To[int64](65533), SupplementalGroups: []int64{1234}}
	secure.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false),
		Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
	create(cs.CoreV1().Pods(clusterNS).Create(ctx, secure, metav1.CreateOptions{}))
	roFile := "/portcullis-cluster-e2e-read-only"
	t.Cleanup(func() { os.Remove(roFile) })
	readonly := shellPod("readonly", corev1.RestartPolicyNever, `touch `+roFile+` && echo root-writable || echo root-read-only; grep '^CapEff:' /proc/self/status`)
	readonly.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{ReadOnlyRootFilesystem: ptr.To(true),
		Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"NET_RAW"}}}
	create(cs.CoreV1().Pods(clusterNS).Create(ctx, readonly, metav1.CreateOptions{}))
	refused := shellPod("refused", corev1.RestartPolicyNever, "echo ran")
	refused.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)}
	create(cs.CoreV1().Pods(clusterNS).Create(ctx, refused, metav1.CreateOptions{}))

	// Lifecycle hooks: a postStart hook runs before the next container
	// starts; on deletion each container's preStop hook (exec in the
	// container, an httpGet to a server of the test) runs before its
	// SIGTERM, the containers' on their own.
	hooksDir, hookGets := t.TempDir(), make(chan string, 10)
	hookSrv := &http.Server{Addr: "127.0.0.1:0", Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hookGets <- r.URL.Path + " " + r.UserAgent()
	})}
	hookLn, err := net.Listen("tcp", "127.0.0.1:0") // the node agent's GET comes from the host
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = hookSrv.Serve(hookLn) }() // returns when closed
	defer hookSrv.Close()
	// Each line a container writes to the shared log.
	logLine := func(line string) string { return "echo " + line + " >> /cluster-e2e-hooks/log" }
	loop := func(name string) string {
		return fmt.Sprintf(`%s; trap '%s; exit 0' TERM; while :; do sleep 0.1; done`, logLine(name+":started"), logLine(name+":sigterm"))
	}
	hooks := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "hooks"}, Spec: corev1.PodSpec{
		TerminationGracePeriodSeconds: ptr.To[int64](20),
		Volumes:                       []corev1.Volume{{Name: "log", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: hooksDir}}}},
		Containers: []corev1.Container{{
			Name: "exec", Image: shellImage, Command: []string{"sh", "-c", loop("exec")},
			Lifecycle: &corev1.Lifecycle{
				PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "sleep 1; " + logLine("exec:post-start")}}},
				PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c",
					logLine("exec:pre-stop") + "; sleep 3; " + logLine("exec:pre-stop-done")}}},
			},
		}, {
			Name: "http", Image: shellImage, Command: []string{"sh", "-c", loop("http")},
			Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{
				Host: "127.0.0.1", Port: intstr.FromInt(hookLn.Addr().(*net.TCPAddr).Port), Path: "/prestop"}}},
		}},
	}}
	for i := range hooks.Spec.Containers {
		hooks.Spec.Containers[i].VolumeMounts = []corev1.VolumeMount{{Name: "log", MountPath: "/cluster-e2e-hooks"}}
	}
	create(cs.CoreV1().Pods(clusterNS).Create(ctx, hooks, metav1.CreateOptions{}))

	for _, name := range []string{"client", "version", "secure", "readonly", "init"} {
		waitFor(t, time.Minute, "pod "+name+" Succeeded", func() error {
			p, err := cs.CoreV1().Pods(clusterNS).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if p.Status.Phase == corev1.PodFailed {
				logs, _ := cs.CoreV1().Pods(clusterNS).GetLogs(name, &corev1.PodLogOptions{}).DoRaw(ctx)
				return permanent(fmt.Errorf("failed: %+v\n%s", p.Status.ContainerStatuses, logs))
			}
			if p.Status.Phase != corev1.PodSucceeded {
				return fmt.Errorf("phase %s", p.Status.Phase)
			}
			return nil
		})
	}
	logs, err := cs.CoreV1().Pods(clusterNS).GetLogs("client", &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		t.Fatalf("logs of client (the kubelet API through the API server): %v", err)
	}
	clientPod, err := cs.CoreV1().Pods(clusterNS).Get(ctx, "client", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"ip=" + clientPod.Status.PodIP + " env=hello-from-a-configmap/s3cret",
		"files=hello-from-a-configmap/s3cret",
		"namespace=" + clusterNS,
		`"path":"/from-pod"`,
		`"path":"/by-name"`, // the Pod's /etc/hosts, in place of cluster DNS
		`"path":"/by-short-name"`,
		`"system:serviceaccount:` + clusterNS + `:default"`,
	} {
		if !strings.Contains(string(logs), want) {
			t.Errorf("client's logs lack %q:\n%s", want, logs)
		}
	}
	logs, err = cs.CoreV1().Pods(clusterNS).GetLogs("version", &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil || !strings.Contains(string(logs), "extprocserver") {
		t.Errorf("logs of extprocserver --version from the image: %q, %v", logs, err)
	}
	logs, err = cs.CoreV1().Pods(clusterNS).GetLogs("secure", &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ids=65532/65533/65533 1234\n", "CapEff:\t0000000000000000\n", "CapBnd:\t0000000000000000\n", "NoNewPrivs:\t1\n"} {
		if !strings.Contains(string(logs), want) {
			t.Errorf("secure's logs lack %q:\n%s", want, logs)
		}
	}
	logs, err = cs.CoreV1().Pods(clusterNS).GetLogs("readonly", &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(logs), "root-read-only") {
		t.Errorf("readonly wrote to / (read-only root):\n%s", logs)
	}
	_, capEff, _ := strings.Cut(string(logs), "CapEff:\t")
	if eff, err := strconv.ParseUint(strings.TrimSpace(capEff), 16, 64); err != nil || eff == 0 || eff&(1<<13) != 0 { // CAP_NET_RAW
		t.Errorf("readonly's effective capabilities %q: want root's without NET_RAW (%v)", capEff, err)
	}
	waitFor(t, time.Minute, "pod refused's CreateContainerConfigError and its event", func() error {
		p, err := cs.CoreV1().Pods(clusterNS).Get(ctx, "refused", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].State.Waiting == nil ||
			p.Status.ContainerStatuses[0].State.Waiting.Reason != "CreateContainerConfigError" {
			return fmt.Errorf("status %+v", p.Status.ContainerStatuses)
		}
		evs, err := cs.CoreV1().Events(clusterNS).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=refused"})
		if err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, "runAsNonRoot") {
				return nil
			}
		}
		return errors.New("no warning event naming runAsNonRoot")
	})
	logs, err = cs.CoreV1().Pods(clusterNS).GetLogs("init", &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil || string(logs) != "first\nsecond\n" {
		t.Errorf("logs of pod init (its init containers' file): %q, %v", logs, err)
	}
	waitFor(t, time.Minute, "pod init-fails Failed by its init container", func() error {
		p, err := cs.CoreV1().Pods(clusterNS).Get(ctx, "init-fails", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Status.Phase != corev1.PodFailed {
			return fmt.Errorf("phase %s", p.Status.Phase)
		}
		if len(p.Status.InitContainerStatuses) != 1 || p.Status.InitContainerStatuses[0].State.Terminated == nil ||
			p.Status.InitContainerStatuses[0].State.Terminated.ExitCode != 4 || p.Status.ContainerStatuses[0].State.Running != nil {
			return permanent(fmt.Errorf("statuses: init %+v, containers %+v", p.Status.InitContainerStatuses, p.Status.ContainerStatuses))
		}
		return nil
	})
	waitFor(t, time.Minute, "pod unknown's ErrImagePull and its event", func() error {
		p, err := cs.CoreV1().Pods(clusterNS).Get(ctx, "unknown", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].State.Waiting == nil ||
			p.Status.ContainerStatuses[0].State.Waiting.Reason != "ErrImagePull" {
			return fmt.Errorf("status %+v", p.Status.ContainerStatuses)
		}
		evs, err := cs.CoreV1().Events(clusterNS).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=unknown"})
		if err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, "example.invalid/nothing:1") {
				return nil
			}
		}
		return errors.New("no warning event naming the image")
	})
	waitFor(t, time.Minute, "pod crash restarted", func() error {
		p, err := cs.CoreV1().Pods(clusterNS).Get(ctx, "crash", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].RestartCount < 1 {
			return fmt.Errorf("status %+v", p.Status.ContainerStatuses)
		}
		if t := p.Status.ContainerStatuses[0].LastTerminationState.Terminated; t == nil || t.ExitCode != 3 {
			return permanent(fmt.Errorf("last termination %+v, want exit code 3", t))
		}
		return nil
	})

	// The hooks Pod deleted: exec's preStop hook (3 s) holds its SIGTERM,
	// not http's, whose GET came first; the Pod goes once both exited.
	waitFor(t, time.Minute, "pod hooks Ready", func() error {
		p, err := cs.CoreV1().Pods(clusterNS).Get(ctx, "hooks", metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("phase %s, containers %+v", p.Status.Phase, p.Status.ContainerStatuses)
	})
	start := time.Now()
	if err := cs.CoreV1().Pods(clusterNS).Delete(ctx, "hooks", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "pod hooks gone", func() error {
		_, err := cs.CoreV1().Pods(clusterNS).Get(ctx, "hooks", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (%v)", err)
	})
	took := time.Since(start)
	t.Logf("pod hooks deleted in %s (exec's preStop hook: 3 s)", took.Round(100*time.Millisecond))
	if took < 3*time.Second || took > 20*time.Second {
		t.Errorf("pod hooks deleted in %s: want its preStop hook's 3 s at least, less than its 20 s grace", took)
	}
	select {
	case got := <-hookGets:
		if !strings.HasPrefix(got, "/prestop kube-lifecycle/") {
			t.Errorf("preStop httpGet: %q, want /prestop from kube-lifecycle", got)
		}
	default:
		t.Error("http's preStop httpGet never came")
	}
	b, err := os.ReadFile(filepath.Join(hooksDir, "log"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(string(b))
	at := func(line string) int {
		for i, l := range lines {
			if l == line {
				return i
			}
		}
		t.Errorf("pod hooks' log lacks %s: %q", line, lines)
		return -1
	}
	if len(lines) != 7 || at("exec:started") >= at("exec:post-start") || at("exec:post-start") >= at("http:started") ||
		at("exec:pre-stop") >= at("exec:pre-stop-done") || at("http:sigterm") >= at("exec:pre-stop-done") ||
		at("exec:pre-stop-done") >= at("exec:sigterm") {
		t.Errorf("pod hooks' log %q: want exec's postStart before http started, http's SIGTERM before exec's preStop hook ended, exec's SIGTERM after it", lines)
	}

	// NetworkPolicies' Ingress rules enforced (cluster_netpol_test.go).
	start = time.Now()
	clusterNetworkPolicies(ctx, t, cs, clusterNS)
	t.Logf("network policies checked in %s", time.Since(start).Round(100*time.Millisecond))

	// Deleting the namespace: the controller manager deletes its Pods, the
	// node stops them, the namespace goes.
	start = time.Now()
	if err := cs.CoreV1().Namespaces().Delete(ctx, clusterNS, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Minute, "the namespace deleted", func() error {
		_, err := cs.CoreV1().Namespaces().Get(ctx, clusterNS, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (%v)", err)
	})
	t.Logf("namespace deleted in %s", time.Since(start).Round(100*time.Millisecond))
	if ns := podNetns(t); len(ns) != 0 {
		t.Errorf("network namespaces of deleted Pods remain: %v", ns)
	}

	downed = true
	down()
	checkClusterGone(t, cfg, self, echo)
}

// upCluster brings the cluster up, waiting while another one runs on the
// machine (another test run, or make cluster: make cluster-down ends it).
func upCluster(ctx context.Context, t *testing.T, cfg cluster.Config) string {
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

// checkClusterGone checks that nothing of the cluster is left: processes,
// network namespaces, links, iptables rules, the state dir.
func checkClusterGone(t *testing.T, cfg cluster.Config, executables ...string) {
	t.Helper()
	if ns := podNetns(t); len(ns) != 0 {
		t.Errorf("network namespaces left: %v", ns)
	}
	out, _ := exec.Command("ip", "-o", "link", "show").Output()
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 1 && (strings.HasPrefix(f[1], cluster.VethPrefix) || strings.HasPrefix(f[1], cluster.Bridge+":")) {
			t.Errorf("link left: %s", line)
		}
	}
	for _, table := range []string{"nat", "filter"} {
		out, _ := exec.Command("iptables", "-t", table, "-S").Output()
		for _, line := range strings.Split(string(out), "\n") {
			if strings.Contains(line, cluster.RuleComment) || strings.Contains(line, "KUBE-SERVICES") ||
				strings.HasPrefix(line, "-N "+cluster.PolicyChainPrefix) {
				t.Errorf("iptables rule left in %s: %s", table, line)
			}
		}
	}
	if _, err := os.Stat(cfg.StateDir); !os.IsNotExist(err) {
		t.Errorf("state dir %s left (%v)", cfg.StateDir, err)
	}
	for _, tool := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy"} {
		executables = append(executables, filepath.Join(cfg.ToolsBin, tool))
	}
	want := map[string]bool{}
	for _, e := range executables {
		if r, err := filepath.EvalSymlinks(e); err == nil {
			e = r
		}
		want[e] = true
	}
	hostNetns, _ := os.Readlink("/proc/self/ns/net")
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		exe, err := os.Readlink(filepath.Join("/proc", p.Name(), "exe"))
		if err != nil || !want[exe] {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		netns, _ := os.Readlink(filepath.Join("/proc", p.Name(), "ns", "net"))
		// Other tests run the same tools and binaries: ours name our
		// state dir (the components) or run in a Pod's namespace.
		if strings.Contains(string(cmdline), cfg.StateDir) || netns != hostNetns {
			t.Errorf("process left: %s %s", p.Name(), strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
}

func podNetns(t *testing.T) []string {
	entries, _ := os.ReadDir("/run/netns")
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), cluster.NetnsPrefix) {
			out = append(out, e.Name())
		}
	}
	return out
}

func echoDeployment() *appsv1.Deployment {
	replicas := int32(2)
	labels := map[string]string{"app": "echo"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "echo"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name:  "echo",
					Image: cluster.EchoServerImage + ":test",
					Args:  []string{"--address=0.0.0.0:8080", "--name=$(POD_NAME)/$(POD_IP)"},
					Env: []corev1.EnvVar{
						{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
						{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
					},
					Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
					ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromString("http")}},
						PeriodSeconds: 1},
					LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}},
						PeriodSeconds: 2},
				}}},
			},
		},
	}
}

func shellPod(name string, restart corev1.RestartPolicy, script string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			RestartPolicy:                 restart,
			TerminationGracePeriodSeconds: new(int64),
			Containers: []corev1.Container{{
				Name: "sh", Image: shellImage, Command: []string{"sh", "-c", script},
				Env: []corev1.EnvVar{{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}},
			}},
		},
	}
}

func getJSON(url string, v any) error {
	// A new connection each time: kube-proxy balances connections.
	c := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", resp.Status, b)
	}
	return json.Unmarshal(b, v)
}

// waitFor polls f every 200 ms until it returns nil, fails the test with
// its last error after timeout, or at once on a permanent error.
func waitFor(t *testing.T, timeout time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		var p permanentErr
		if errors.As(err, &p) || time.Now().After(deadline) {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

type permanentErr struct{ error }

func permanent(err error) error { return permanentErr{err} }

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
