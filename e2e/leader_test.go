package e2e

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection"
	"sigs.k8s.io/controller-runtime/pkg/client"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/e2e/harness"
)

// The leader election settings of the failover test: short, so that the
// test is, and a takeover must come within leaseDuration.
const (
	leaseDuration = 4 * time.Second
	renewDeadline = 2 * time.Second
	retryPeriod   = 500 * time.Millisecond
)

// TestLeaderElectionFailover runs two `portcullis serve --leader-elect`
// replicas on one API server, an Envoy on each. Only the leader writes
// status. Killing the leader (SIGKILL: no release of the Lease) under load:
// the Envoy of the dead replica keeps serving its last configuration and
// the survivor's Envoy serves on, with no failed request; a change made
// before the survivor leads reaches its Envoy at once; the survivor takes
// the Lease within the lease duration and writes the new object's status,
// and only that one (the unchanged status is not rewritten).
func TestLeaderElectionFailover(t *testing.T) {
	api := harness.StartAPIServer(t, harness.CRDDirs(t)...)
	echo := harness.StartEcho(t, "echo")
	ctx := context.Background()
	args := func(identity string) []string {
		return []string{"--provider", "kubernetes", "--kubeconfig", api.KubeconfigPath,
			"--enable-external-name-services", "--allow-loopback-external-names",
			"--leader-elect", "--leader-elect-namespace", "default", "--leader-elect-identity", identity,
			"--leader-elect-lease-duration", leaseDuration.String(), "--leader-elect-renew-deadline", renewDeadline.String(),
			"--leader-elect-retry-period", retryPeriod.String()}
	}
	type replica struct {
		cp              *harness.ControlPlane
		httpAddr, https string
	}
	start := func(identity string) replica {
		r := replica{httpAddr: harness.FreeAddr(t), https: harness.FreeAddr(t)}
		r.cp = harness.StartControlPlane(t, "portcullis-"+identity, r.httpAddr, r.https, args(identity)...)
		return r
	}
	metric := func(r replica, name string) float64 {
		t.Helper()
		v, err := r.cp.Metric(name)
		if err != nil {
			t.Fatalf("%s: %v", r.cp.Name, err)
		}
		return v
	}
	a := start("a")
	harness.Eventually(t, 30*time.Second, func() error {
		if v, err := a.cp.Metric("portcullis_leader"); err != nil || v != 1 {
			return fmt.Errorf("replica a does not lead yet (%v, %v)", v, err)
		}
		return nil
	})
	b := start("b")
	harness.StartEnvoyOn(t, a.cp.XDSAddr)
	harness.StartEnvoyOn(t, b.cp.XDSAddr)

	first := leaderProxy("first")
	if err := api.Apply(ctx, append(harness.LoopbackExternalName("default", "echo", 80, echo.Port), first)...); err != nil {
		t.Fatal(err)
	}
	for _, r := range []replica{a, b} {
		harness.EventuallyEcho(t, harness.HTTPClient(r.httpAddr), harness.MustRequest(t, "http://first.example.com/"), http.StatusOK)
	}
	eventuallyValid(t, api, "first")
	if got := metric(b, "portcullis_status_writes_total"); got != 0 || metric(b, "portcullis_leader") != 0 {
		t.Fatalf("the follower wrote %v statuses (leader gauge %v)", got, metric(b, "portcullis_leader"))
	}
	if got := metric(a, "portcullis_status_writes_total"); got < 1 {
		t.Fatalf("the leader wrote %v statuses", got)
	}
	if h := leaseHolder(t, api); h != "a" {
		t.Fatalf("the Lease is held by %q, want a", h)
	}

	// Steady load on both Envoys across the kill.
	loadA := harness.StartSteadyLoad(2, 4*leaseDuration, echoRequests(a.httpAddr, "first.example.com"))
	loadB := harness.StartSteadyLoad(2, 4*leaseDuration, echoRequests(b.httpAddr, "first.example.com"))
	time.Sleep(leaseDuration / 2)

	a.cp.Kill()
	killed := time.Now()
	second := leaderProxy("second")
	if err := api.Apply(ctx, second); err != nil {
		t.Fatal(err)
	}
	if metric(b, "portcullis_leader") != 0 {
		t.Fatal("replica b led before the lease of the killed leader expired: the change was not made during the gap")
	}
	// The change reaches the survivor's Envoy while nobody writes status.
	harness.EventuallyEcho(t, harness.HTTPClient(b.httpAddr), harness.MustRequest(t, "http://second.example.com/"), http.StatusOK)
	served := time.Since(killed)

	var took time.Duration
	harness.Eventually(t, 3*leaseDuration, func() error {
		if v, err := b.cp.Metric("portcullis_leader"); err != nil || v != 1 {
			return fmt.Errorf("replica b does not lead (%v, %v)", v, err)
		}
		took = time.Since(killed)
		return nil
	})
	eventuallyValid(t, api, "second")
	statusAfter := time.Since(killed)
	if h := leaseHolder(t, api); h != "b" {
		t.Errorf("the Lease is held by %q after the takeover, want b", h)
	}
	// Within the lease duration of the last renewal as the survivor saw
	// it: the survivor polls every retry period jittered by up to
	// client-go's JitterFactor (1.2), so it sees the last renewal up to
	// one jittered period late and the expiry up to one more (and a second
	// for a loaded machine).
	if limit := leaseDuration + 2*time.Duration(float64(retryPeriod)*(1+leaderelection.JitterFactor)) + time.Second; took > limit {
		t.Errorf("replica b took the Lease %v after the leader died; want within %v", took, limit)
	}
	if got := metric(b, "portcullis_status_writes_total"); got != 1 {
		t.Errorf("the new leader wrote %v statuses; want 1: the new HTTPProxy's (first's is unchanged)", got)
	}

	ra, rb := loadA.Wait(), loadB.Wait()
	t.Logf("leader killed: change served by the survivor's Envoy after %v, survivor leading after %v, new status written after %v",
		served.Round(time.Millisecond), took.Round(time.Millisecond), statusAfter.Round(time.Millisecond))
	t.Logf("load on the dead leader's Envoy: %s", ra)
	t.Logf("load on the survivor's Envoy: %s", rb)
	for name, r := range map[string]harness.LoadReport{"the dead leader's Envoy": ra, "the survivor's Envoy": rb} {
		if r.Requests == 0 || r.Errors != 0 {
			t.Errorf("%s: %s; want requests and none failed", name, r)
		}
	}
}

func leaderProxy(name string) *contourv1.HTTPProxy {
	return &contourv1.HTTPProxy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "projectcontour.io/v1", Kind: "HTTPProxy"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{Fqdn: name + ".example.com"},
			Routes:      []contourv1.Route{{Services: []contourv1.Service{{Name: "echo", Port: 80}}}},
		},
	}
}

func eventuallyValid(t *testing.T, api *harness.APIServer, name string) {
	t.Helper()
	harness.Eventually(t, statusTimeout, func() error {
		var p contourv1.HTTPProxy
		if err := api.Client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, &p); err != nil {
			return err
		}
		st, reason, err := harness.ValidOf(p.Status)
		if err != nil {
			return err
		}
		if st != "True" {
			return fmt.Errorf("HTTPProxy %s: Valid %s/%s", name, st, reason)
		}
		return nil
	})
}

func leaseHolder(t *testing.T, api *harness.APIServer) string {
	t.Helper()
	var l coordinationv1.Lease
	if err := api.Client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "portcullis"}, &l); err != nil {
		t.Fatal(err)
	}
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// echoRequests sends GET / for host to Envoy at addr; anything but a 200
// is a failure.
func echoRequests(addr, host string) func(ctx context.Context, _ int) error {
	c := harness.HTTPClient(addr)
	return func(ctx context.Context, _ int) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+host+"/", nil)
		if err != nil {
			return err
		}
		resp, err := c.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	}
}
