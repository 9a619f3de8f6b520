// Package leader elects, among the replicas of a control plane, the one
// that writes status: a Lease (coordination.k8s.io/v1) held through
// client-go's leaderelection. Every replica keeps watching and serving xDS;
// only the holder of the Lease writes, so replicas never race on status.
package leader

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Options of the election. The defaults are client-go's (and
// Kubernetes' own controllers'): a dead leader is replaced within
// LeaseDuration of its last renewal.
type Options struct {
	// Namespace and Name of the Lease.
	Namespace string
	Name      string
	// Identity of this replica in the Lease (holderIdentity): unique
	// among the replicas (the Pod's name in the chart).
	Identity string
	// LeaseDuration is how long the other replicas wait, after the last
	// renewal they saw, before they take the Lease.
	LeaseDuration time.Duration
	// RenewDeadline is how long the leader keeps trying to renew before it
	// gives up leading (and stops writing).
	RenewDeadline time.Duration
	// RetryPeriod is how often the replicas try to take or renew the Lease.
	RetryPeriod time.Duration
}

// Defaults of the flags.
const (
	DefaultName          = "portcullis"
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

// inClusterNamespace is where a Pod's service account namespace is
// mounted.
const inClusterNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// DefaultNamespace is the Pod's own namespace in a cluster, else
// "default".
func DefaultNamespace() string {
	if b, err := os.ReadFile(inClusterNamespace); err == nil && strings.TrimSpace(string(b)) != "" {
		return strings.TrimSpace(string(b))
	}
	return "default"
}

// DefaultIdentity is the host name (the Pod's name in a cluster) with a
// random suffix, so that two processes on one host never share it.
func DefaultIdentity() string {
	host, _ := os.Hostname()
	b := make([]byte, 4)
	rand.Read(b)
	return host + "_" + hex.EncodeToString(b)
}

// Validate checks the options as client-go will, with the flags' names.
func (o Options) Validate() error {
	switch {
	case o.Namespace == "" || o.Name == "":
		return fmt.Errorf("--leader-elect-namespace and --leader-elect-lease-name must not be empty")
	case o.Identity == "":
		return fmt.Errorf("--leader-elect-identity must not be empty")
	case o.RetryPeriod <= 0:
		return fmt.Errorf("--leader-elect-retry-period must be positive")
	case o.RenewDeadline <= time.Duration(leaderelection.JitterFactor*float64(o.RetryPeriod)):
		return fmt.Errorf("--leader-elect-renew-deadline (%s) must be more than %.1f × --leader-elect-retry-period (%s)", o.RenewDeadline, leaderelection.JitterFactor, o.RetryPeriod)
	case o.LeaseDuration <= o.RenewDeadline:
		return fmt.Errorf("--leader-elect-lease-duration (%s) must be more than --leader-elect-renew-deadline (%s)", o.LeaseDuration, o.RenewDeadline)
	}
	return nil
}

// Elector campaigns for the Lease.
type Elector struct {
	opts    Options
	client  coordinationv1client.LeasesGetter
	log     *slog.Logger
	leading atomic.Bool
	// mu is held while lead runs: a term's lead starts only once the
	// previous one has returned.
	mu sync.Mutex
}

// New returns an elector on the API server of cfg.
func New(cfg *rest.Config, opts Options, log *slog.Logger) (*Elector, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	c, err := coordinationv1client.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Elector{opts: opts, client: c, log: log}, nil
}

// Leading reports whether this replica holds the Lease now.
func (e *Elector) Leading() bool { return e.leading.Load() }

// Run campaigns until ctx ends. Each time this replica takes the Lease,
// lead runs with a context that ends when the Lease is lost (or ctx
// ends); the leads of two terms never overlap, and Run returns once the
// last one has. When ctx ends while leading, the Lease is released: the
// next replica takes over at once instead of after LeaseDuration.
func (e *Elector) Run(ctx context.Context, lead func(ctx context.Context)) {
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: e.opts.Namespace, Name: e.opts.Name},
		Client:     e.client,
		LockConfig: resourcelock.ResourceLockConfig{Identity: e.opts.Identity},
	}
	for ctx.Err() == nil {
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock:            lock,
			Name:            e.opts.Name,
			LeaseDuration:   e.opts.LeaseDuration,
			RenewDeadline:   e.opts.RenewDeadline,
			RetryPeriod:     e.opts.RetryPeriod,
			ReleaseOnCancel: true,
			Callbacks: leaderelection.LeaderCallbacks{
				// client-go runs it in a goroutine of its own, which may
				// start after the term it belongs to has ended.
				OnStartedLeading: func(lctx context.Context) {
					e.mu.Lock()
					defer e.mu.Unlock()
					if lctx.Err() != nil {
						return
					}
					e.leading.Store(true)
					e.log.Info("leader election: leading, this replica writes status", "lease", e.opts.Namespace+"/"+e.opts.Name, "identity", e.opts.Identity)
					lead(lctx)
					e.leading.Store(false)
				},
				OnStoppedLeading: func() {},
				OnNewLeader: func(identity string) {
					if identity != e.opts.Identity {
						e.log.Info("leader election: following", "lease", e.opts.Namespace+"/"+e.opts.Name, "leader", identity)
					}
				},
			},
		})
		if err != nil {
			// Validate checked what client-go checks.
			panic(err)
		}
		le.Run(ctx)
		if ctx.Err() == nil {
			e.log.Warn("leader election: not leading: campaigning for the lease", "lease", e.opts.Namespace+"/"+e.opts.Name)
		}
	}
	e.waitLead()
}

// waitLead returns once the last term's lead has: a lead runs holding mu,
// so mu is free once it returns (a term whose goroutine starts later
// returns at once).
func (e *Elector) waitLead() {
	e.mu.Lock()
	defer e.mu.Unlock()
}
