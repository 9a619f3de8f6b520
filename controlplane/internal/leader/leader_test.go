package leader

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/portcullis/portcullis/controlplane/internal/testapiserver"
)

func TestValidate(t *testing.T) {
	ok := Options{Namespace: "ns", Name: "l", Identity: "a", LeaseDuration: DefaultLeaseDuration, RenewDeadline: DefaultRenewDeadline, RetryPeriod: DefaultRetryPeriod}
	for _, tc := range []struct {
		name    string
		change  func(*Options)
		wantErr string
	}{
		{"defaults", func(*Options) {}, ""},
		{"no namespace", func(o *Options) { o.Namespace = "" }, "--leader-elect-namespace"},
		{"no identity", func(o *Options) { o.Identity = "" }, "--leader-elect-identity"},
		{"renew not under the lease", func(o *Options) { o.RenewDeadline = o.LeaseDuration }, "--leader-elect-lease-duration"},
		{"retry too close to renew", func(o *Options) { o.RetryPeriod = o.RenewDeadline }, "--leader-elect-renew-deadline"},
		{"no retry", func(o *Options) { o.RetryPeriod = 0 }, "--leader-elect-retry-period"},
	} {
		o := ok
		tc.change(&o)
		err := o.Validate()
		if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%s: Validate() = %v, want an error naming %q", tc.name, err, tc.wantErr)
		}
	}
}

// Two electors on one Lease of a real API server: one leads; when it
// stops (its context ends), it releases the Lease and the other leads at
// once, not a lease duration later.
func TestElectorHandsOverOnRelease(t *testing.T) {
	api := testapiserver.Start(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	opts := func(id string) Options {
		return Options{Namespace: "default", Name: "portcullis", Identity: id, LeaseDuration: 30 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 200 * time.Millisecond}
	}
	var leading [2]atomic.Int32
	var electors [2]*Elector
	var stops [2]context.CancelFunc
	var dones [2]chan struct{}
	for i, id := range []string{"a", "b"} {
		e, err := New(api.Config, opts(id), log)
		if err != nil {
			t.Fatal(err)
		}
		electors[i] = e
		ctx, cancel := context.WithCancel(context.Background())
		stops[i], dones[i] = cancel, make(chan struct{})
		go func() {
			defer close(dones[i])
			e.Run(ctx, func(ctx context.Context) {
				leading[i].Add(1)
				<-ctx.Done()
				leading[i].Add(-1)
			})
		}()
		defer func() { cancel(); <-dones[i] }()
		if i == 0 {
			wait(t, 10*time.Second, func() bool { return e.Leading() })
		}
	}
	time.Sleep(time.Second)
	if electors[1].Leading() || leading[1].Load() != 0 {
		t.Fatal("both replicas lead")
	}
	var lease coordinationv1.Lease
	if err := api.Client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "portcullis"}, &lease); err != nil {
		t.Fatal(err)
	}
	if got := *lease.Spec.HolderIdentity; got != "a" {
		t.Fatalf("the Lease is held by %q, want a", got)
	}

	start := time.Now()
	stops[0]()
	<-dones[0]
	if electors[0].Leading() || leading[0].Load() != 0 {
		t.Fatal("a stopped elector still leads")
	}
	wait(t, 10*time.Second, func() bool { return electors[1].Leading() && leading[1].Load() == 1 })
	// Well under the 30 s lease: the Lease was released.
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the other replica took %v to lead after a release", took)
	}
}

func wait(t *testing.T, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
