package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/portcullis/portcullis/e2e/harness"
)

// TestXDSProtocols runs the real Envoy over each xDS protocol the
// bootstrap offers (delta, the default, and state of the world) and moves
// a route from one Service to another under load: no request fails and
// the old cluster is gone afterwards; a host removed is gone; an Envoy
// restarted against the same control plane is served again. The order
// that keeps requests from failing (make before break) is asserted by
// internal/xdsserver's TestMakeBeforeBreak and TestRoutesWaitForWarmClusters:
// the window it closes is a round trip, too short for a load to hit
// reliably (this test still passed with removals sent first).
func TestXDSProtocols(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{{"delta", nil}, {"state of the world", []string{"--sotw"}}} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := harness.StartEcho(t, "a"), harness.StartEcho(t, "b")
			dir := t.TempDir()
			httpAddr, httpsAddr := harness.FreeAddr(t), harness.FreeAddr(t)
			cp := harness.StartControlPlane(t, "portcullis", httpAddr, httpsAddr, "--provider", "file", "-f", dir)
			envoy := harness.StartEnvoyOn(t, cp.XDSAddr, tc.args...)
			objects := harness.Dir(dir)
			proxy := func(name, fqdn, service string) client.Object {
				return &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
					Spec: contourv1.HTTPProxySpec{VirtualHost: &contourv1.VirtualHost{Fqdn: fqdn},
						Routes: []contourv1.Route{{Services: []contourv1.Service{{Name: service, Port: 80}}}}}}
			}
			objs := append(harness.LoopbackEndpointSlice("default", "a", 80, a.Port), harness.LoopbackEndpointSlice("default", "b", 80, b.Port)...)
			// b's cluster is in use already (keep); a's is used only by
			// the route that moves.
			objs = append(objs, proxy("keep", "keep.example.com", "b"), proxy("move", "move.example.com", "a"))
			ctx := context.Background()
			if err := objects.Apply(ctx, objs...); err != nil {
				t.Fatal(err)
			}
			c := harness.HTTPClient(httpAddr)
			if got := harness.EventuallyEcho(t, c, harness.MustRequest(t, "http://move.example.com/"), http.StatusOK); got.Name != "a" {
				t.Fatalf("move.example.com answered by %s, want a", got.Name)
			}

			// Load on the moving route while it moves to b.
			// Until the move is over, however long it takes.
			load := harness.StartSteadyLoad(4, 5*time.Minute, func(context.Context, int) error {
				got, err := harness.GetEcho(c, harness.MustRequest(t, "http://move.example.com/"), http.StatusOK)
				if err == nil && got.Name != "a" && got.Name != "b" {
					err = fmt.Errorf("answered by %s", got.Name)
				}
				return err
			})
			time.Sleep(300 * time.Millisecond)
			if err := objects.Apply(ctx, proxy("move", "move.example.com", "b")); err != nil {
				t.Fatal(err)
			}
			moved := time.Now()
			harness.Eventually(t, 30*time.Second, func() error {
				got, err := harness.GetEcho(c, harness.MustRequest(t, "http://move.example.com/"), http.StatusOK)
				if err != nil {
					return err
				}
				if got.Name != "b" {
					return fmt.Errorf("still answered by %s", got.Name)
				}
				return nil
			})
			// The old cluster is removed by now: a's endpoints are no
			// longer in Envoy's clusters.
			harness.Eventually(t, 10*time.Second, func() error {
				body, err := envoy.Admin("/clusters")
				if err != nil {
					return err
				}
				if bytes.Contains(body, []byte("service/default/a/80::")) {
					return fmt.Errorf("Envoy still has the cluster of a")
				}
				return nil
			})
			done := time.Since(moved)
			report := load.Stop()
			t.Logf("while the route moved (%s until a's cluster was gone): %s", done.Round(time.Millisecond), report)
			if report.Errors > 0 || report.Requests < 20 {
				t.Errorf("%d of %d requests failed while the route moved; want 0 of at least 20", report.Errors, report.Requests)
			}

			// A host removed is no longer served; the other stays.
			if err := objects.Delete(ctx, proxy("move", "", "")); err != nil {
				t.Fatal(err)
			}
			harness.EventuallyStatus(t, c, "http://move.example.com/", http.StatusNotFound)
			if got := harness.EventuallyEcho(t, c, harness.MustRequest(t, "http://keep.example.com/"), http.StatusOK); got.Name != "b" {
				t.Errorf("keep.example.com answered by %s, want b", got.Name)
			}

			// A new Envoy process on the same control plane gets it all.
			envoy.Restart()
			if got := harness.EventuallyEcho(t, c, harness.MustRequest(t, "http://keep.example.com/"), http.StatusOK); got.Name != "b" {
				t.Errorf("after a restart of Envoy, keep.example.com answered by %s, want b", got.Name)
			}
			harness.EventuallyStatus(t, c, "http://move.example.com/", http.StatusNotFound)
		})
	}
}
