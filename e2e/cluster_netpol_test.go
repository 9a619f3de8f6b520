package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/portcullis/portcullis/e2e/cluster"
)

// clusterNetworkPolicies is TestCluster's NetworkPolicy check in namespace
// ns: a server Pod (8080, its named port http, behind a Service; and 9090)
// under a policy letting in Pods labelled role=client on http only. A
// client Pod with the label connects to http (at the Pod's address and
// through the ClusterIP), not to 9090; one without connects to neither;
// the host reaches both ports and the server's readiness probe keeps it
// Ready. An Egress policy is warned of as not enforced. With the policy
// deleted, the Pod without the label connects to both.
func clusterNetworkPolicies(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string) {
	echo := func(name string, port int32) corev1.Container {
		return corev1.Container{Name: name, Image: cluster.EchoServerImage + ":test", Args: []string{fmt.Sprintf("--address=0.0.0.0:%d", port)},
			Ports: []corev1.ContainerPort{{Name: name, ContainerPort: port}}}
	}
	server := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "np-server", Labels: map[string]string{"app": "np-server"}},
		Spec: corev1.PodSpec{TerminationGracePeriodSeconds: new(int64), Containers: []corev1.Container{echo("http", 8080), echo("other", 9090)}}}
	server.Spec.Containers[0].ReadinessProbe = &corev1.Probe{PeriodSeconds: 1, FailureThreshold: 2,
		ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromString("http")}}}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, server, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc, err := cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "np-server"},
		Spec: corev1.ServiceSpec{Selector: server.Labels, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromString("http")}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	serverIP := waitPodReady(ctx, t, cs, ns, "np-server")
	httpAddr, otherAddr, svcAddr := net.JoinHostPort(serverIP, "8080"), net.JoinHostPort(serverIP, "9090"), net.JoinHostPort(svc.Spec.ClusterIP, "80")
	addrs := []string{httpAddr, svcAddr, otherAddr}

	policy := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "np-server"}, Spec: networkingv1.NetworkPolicySpec{
		PodSelector: metav1.LabelSelector{MatchLabels: server.Labels},
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		Ingress: []networkingv1.NetworkPolicyIngressRule{{
			From:  []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"role": "client"}}}},
			Ports: []networkingv1.NetworkPolicyPort{{Port: ptr.To(intstr.FromString("http"))}},
		}},
	}}
	if _, err := cs.NetworkingV1().NetworkPolicies(ns).Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the policy's chain for the server", func() error { return policyChainFor(serverIP, true) })
	applied := time.Now()
	got := dialFromPods(ctx, t, cs, ns, map[string]map[string]string{
		"np-client":   {"role": "client"},
		"np-stranger": {"role": "stranger"},
	}, addrs)
	checkOpen(t, "np-client (role=client)", got["np-client"], map[string]bool{httpAddr: true, svcAddr: true, otherAddr: false})
	checkOpen(t, "np-stranger", got["np-stranger"], map[string]bool{httpAddr: false, svcAddr: false, otherAddr: false})

	// The node's own traffic is not subject to the policy: the test (the
	// host) reaches both ports, and the readiness probe (from the host)
	// kept the server Ready since.
	for _, a := range []string{httpAddr, otherAddr} {
		c, err := net.DialTimeout("tcp", a, 2*time.Second)
		if err != nil {
			t.Errorf("from the host, %s under the policy: %v, want open (the node's traffic is allowed)", a, err)
			continue
		}
		c.Close()
	}
	if d := 3*time.Second - time.Since(applied); d > 0 {
		time.Sleep(d) // more than the probe's two failures
	}
	if ip := waitPodReady(ctx, t, cs, ns, "np-server"); ip != serverIP {
		t.Errorf("np-server's address %s, was %s", ip, serverIP)
	}
	evs, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=np-server,reason=Unhealthy"})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs.Items {
		t.Errorf("np-server's probe failed under the policy: %s", e.Message)
	}

	// Egress rules are not enforced, and the policy says so.
	egress := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "np-egress"}, Spec: networkingv1.NetworkPolicySpec{
		PodSelector: metav1.LabelSelector{MatchLabels: server.Labels},
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
	}}
	if _, err := cs.NetworkingV1().NetworkPolicies(ns).Create(ctx, egress, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the EgressNotEnforced event of np-egress", func() error {
		evs, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=np-egress,involvedObject.kind=NetworkPolicy"})
		if err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.Type == corev1.EventTypeWarning && e.Reason == "EgressNotEnforced" && strings.Contains(e.Message, "not enforced") {
				return nil
			}
		}
		return fmt.Errorf("events %+v", evs.Items)
	})

	// The policy deleted, the server accepts everything again.
	if err := cs.NetworkingV1().NetworkPolicies(ns).Delete(ctx, "np-server", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the server's chain gone", func() error { return policyChainFor(serverIP, false) })
	got = dialFromPods(ctx, t, cs, ns, map[string]map[string]string{"np-stranger-after": {"role": "stranger"}}, addrs)
	checkOpen(t, "np-stranger-after (policy deleted)", got["np-stranger-after"], map[string]bool{httpAddr: true, svcAddr: true, otherAddr: true})
}

// policyChainFor waits for the node agent's rules to (not) send the
// traffic to ip to a chain of its own: the policy applied (or removed).
func policyChainFor(ip string, want bool) error {
	out, err := exec.Command("iptables", "-t", "filter", "-S", cluster.PolicyChain).CombinedOutput()
	if err != nil {
		return fmt.Errorf("iptables -S %s: %v: %s", cluster.PolicyChain, err, out)
	}
	if has := strings.Contains(string(out), "-d "+ip+"/32 "); has != want {
		return fmt.Errorf("%s has a rule for %s: %v, want %v:\n%s", cluster.PolicyChain, ip, has, want, out)
	}
	return nil
}

// dialFromPods runs a Pod per name with its labels, each connecting to
// addrs (echoserver --dial), and returns which of addrs each found open.
func dialFromPods(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string, pods map[string]map[string]string, addrs []string) map[string]map[string]bool {
	t.Helper()
	for name, labels := range pods {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever, TerminationGracePeriodSeconds: new(int64),
			Containers: []corev1.Container{{Name: "dial", Image: cluster.EchoServerImage + ":test",
				Args: []string{"--dial=" + strings.Join(addrs, ","), "--dial-timeout=2s"}}},
		}}
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]map[string]bool{}
	for name := range pods {
		waitFor(t, time.Minute, "pod "+name+" Succeeded", func() error {
			p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if p.Status.Phase == corev1.PodFailed {
				return permanent(fmt.Errorf("failed: %+v", p.Status.ContainerStatuses))
			}
			if p.Status.Phase != corev1.PodSucceeded {
				return fmt.Errorf("phase %s", p.Status.Phase)
			}
			return nil
		})
		logs, err := cs.CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{}).DoRaw(ctx)
		if err != nil {
			t.Fatalf("logs of %s: %v", name, err)
		}
		got[name] = map[string]bool{}
		for _, line := range strings.Split(strings.TrimSpace(string(logs)), "\n") {
			addr, rest, _ := strings.Cut(line, " ")
			got[name][addr] = rest == "open"
		}
		t.Logf("from pod %s:\n%s", name, strings.TrimSpace(string(logs)))
	}
	return got
}

func checkOpen(t *testing.T, from string, got, want map[string]bool) {
	t.Helper()
	for addr, open := range want {
		if g, ok := got[addr]; !ok {
			t.Errorf("from %s: %s not dialled (%v)", from, addr, got)
		} else if g != open {
			t.Errorf("from %s: %s open=%v, want %v", from, addr, g, open)
		}
	}
}

// waitPodReady waits for the Pod's Ready condition and returns its address.
func waitPodReady(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name string) string {
	t.Helper()
	var ip string
	waitFor(t, time.Minute, "pod "+name+" Ready", func() error {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				ip = p.Status.PodIP
				return nil
			}
		}
		return errors.New("not Ready")
	})
	return ip
}
