package nodeagent

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// probeKind is which of a container's probes a loop runs.
type probeKind string

const (
	startupProbe   probeKind = "Startup"
	livenessProbe  probeKind = "Liveness"
	readinessProbe probeKind = "Readiness"
)

// probes runs the container's startup, readiness and liveness probes
// until ctx ends (the process exited), as the kubelet does: the startup
// probe first; a failed startup or liveness probe kills the container
// (which restarts by the Pod's policy); readiness sets Ready.
func (c *container) probes(ctx context.Context) {
	if sp := c.spec.StartupProbe; sp != nil {
		if !c.loop(ctx, sp, startupProbe) {
			return
		}
		c.p.mu.Lock()
		t := true
		c.status.Started = &t
		c.ready = c.spec.ReadinessProbe == nil
		c.p.mu.Unlock()
		c.p.a.notifyPod(c.p)
	}
	if lp := c.spec.LivenessProbe; lp != nil {
		go c.loop(ctx, lp, livenessProbe)
	}
	if rp := c.spec.ReadinessProbe; rp != nil {
		c.loop(ctx, rp, readinessProbe)
	}
}

// loop probes every period after the initial delay. Readiness sets Ready
// after the thresholds; a startup or liveness probe kills the container
// after failureThreshold failures (false), and a startup probe returns
// true at its first success. It returns false when ctx ends.
func (c *container) loop(ctx context.Context, pr *corev1.Probe, kind probeKind) bool {
	period := seconds(pr.PeriodSeconds, 10)
	timeout := seconds(pr.TimeoutSeconds, 1)
	success, failure := int(max(pr.SuccessThreshold, 1)), int(max(pr.FailureThreshold, 3))
	select {
	case <-ctx.Done():
		return false
	case <-time.After(time.Duration(pr.InitialDelaySeconds) * time.Second):
	}
	okRun, failRun := 0, 0
	for {
		err := c.check(ctx, pr, timeout)
		if ctx.Err() != nil {
			return false
		}
		if err == nil {
			okRun, failRun = okRun+1, 0
		} else {
			okRun, failRun = 0, failRun+1
		}
		switch {
		case kind == readinessProbe:
			c.readiness(err, okRun >= success, failRun >= failure, failRun == failure)
		case err == nil && kind == startupProbe:
			return true
		case failRun >= failure:
			c.failedProbe(pr, kind, err)
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(period):
		}
	}
}

// readiness applies one readiness probe's result: ready after enough
// successes, not ready after enough failures (an event at the threshold).
func (c *container) readiness(err error, succeeded, failed, atThreshold bool) {
	c.p.mu.Lock()
	was := c.ready
	if succeeded {
		c.ready = true
	} else if failed {
		c.ready = false
	}
	changed := was != c.ready
	c.p.mu.Unlock()
	if err != nil && atThreshold {
		c.p.a.recorder.Eventf(c.p.pod, corev1.EventTypeWarning, "Unhealthy", "Readiness probe failed: %v", err)
	}
	if changed {
		c.p.a.notifyPod(c.p)
	}
}

// failedProbe stops a container whose startup or liveness probe failed, as
// the kubelet does: the preStop hook, SIGTERM, then SIGKILL after the
// probe's grace period, else the Pod's.
func (c *container) failedProbe(pr *corev1.Probe, kind probeKind, err error) {
	c.p.a.recorder.Eventf(c.p.pod, corev1.EventTypeWarning, "Unhealthy", "%s probe failed: %v", kind, err)
	grace := terminationGrace(c.p.pod)
	if pr.TerminationGracePeriodSeconds != nil {
		grace = time.Duration(*pr.TerminationGracePeriodSeconds) * time.Second
	}
	c.terminate(grace, true, fmt.Sprintf("Container %s failed %s probe, will be restarted", c.spec.Name, strings.ToLower(string(kind))))
}

func seconds(v, def int32) time.Duration {
	if v <= 0 {
		v = def
	}
	return time.Duration(v) * time.Second
}

// check runs one probe against the Pod's address (from the host, as the
// kubelet does).
func (c *container) check(ctx context.Context, pr *corev1.Probe, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ip := c.p.pod.Status.PodIP
	switch {
	case pr.HTTPGet != nil:
		req, err := c.httpGetRequest(ctx, pr.HTTPGet, "kube-probe/1.37")
		if err != nil {
			return err
		}
		resp, err := probeClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode < 200 || resp.StatusCode >= 400 {
			return fmt.Errorf("HTTP probe failed with statuscode: %d", resp.StatusCode)
		}
		return nil
	case pr.TCPSocket != nil:
		port, err := c.port(pr.TCPSocket.Port)
		if err != nil {
			return err
		}
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
		if err != nil {
			return err
		}
		return conn.Close()
	case pr.GRPC != nil:
		conn, err := grpc.NewClient(net.JoinHostPort(ip, strconv.Itoa(int(pr.GRPC.Port))), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return err
		}
		defer conn.Close()
		svc := ""
		if pr.GRPC.Service != nil {
			svc = *pr.GRPC.Service
		}
		resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: svc})
		if err != nil {
			return err
		}
		if resp.Status != healthpb.HealthCheckResponse_SERVING {
			return fmt.Errorf("gRPC health: %s", resp.Status)
		}
		return nil
	case pr.Exec != nil:
		return c.exec(ctx, pr.Exec.Command, nil)
	}
	return fmt.Errorf("probe without a handler")
}

// httpGetRequest is the GET of a probe's or a hook's httpGet action: to
// the Pod's address unless it names a host, on a port number or a
// container port's name.
func (c *container) httpGetRequest(ctx context.Context, h *corev1.HTTPGetAction, userAgent string) (*http.Request, error) {
	port, err := c.port(h.Port)
	if err != nil {
		return nil, err
	}
	host := c.p.pod.Status.PodIP
	if h.Host != "" {
		host = h.Host
	}
	scheme := "http"
	if h.Scheme == corev1.URISchemeHTTPS {
		scheme = "https"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s://%s%s", scheme, net.JoinHostPort(host, strconv.Itoa(port)), h.Path), nil)
	if err != nil {
		return nil, err
	}
	for _, hd := range h.HTTPHeaders {
		if hd.Name == "Host" {
			req.Host = hd.Value
		} else {
			req.Header.Add(hd.Name, hd.Value)
		}
	}
	req.Header.Set("User-Agent", userAgent)
	return req, nil
}

// exec runs command in the container's namespaces, mounts, user and
// environment (an exec probe's or hook's), its output to out (nil:
// discarded), killed when ctx ends.
func (c *container) exec(ctx context.Context, command []string, out io.Writer) error {
	if len(command) == 0 {
		return fmt.Errorf("exec without a command")
	}
	im, err := c.p.a.images.get(c.spec.Image)
	if err != nil {
		return err
	}
	argv := append([]string(nil), command...)
	if argv[0], err = im.resolve(argv[0]); err != nil {
		return err
	}
	cmd, err := c.command(argv, out)
	if err != nil {
		return err
	}
	// Output copied from a pipe: a process the command left behind must
	// not hold Wait.
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		return err
	}
	var waitErr error
	done := make(chan struct{})
	go func() {
		waitErr = cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
		return waitErr
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done // waitErr is the kill's: ctx's error says why
		return ctx.Err()
	}
}

// port resolves a probe's port: a number, or a container port's name.
func (c *container) port(p intstr.IntOrString) (int, error) {
	if p.Type == intstr.Int {
		return p.IntValue(), nil
	}
	for _, cp := range c.spec.Ports {
		if cp.Name == p.StrVal {
			return int(cp.ContainerPort), nil
		}
	}
	return 0, fmt.Errorf("no container port named %q", p.StrVal)
}

// probeClient does not follow redirects to other hosts' and skips TLS
// verification, as the kubelet's prober.
var probeClient = &http.Client{
	Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true},
	CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) >= 10 {
			return http.ErrUseLastResponse
		}
		return nil
	},
}
