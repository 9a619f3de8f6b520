package extension

import (
	"context"
	"errors"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/resolver/manual"
)

// Connect dials every registration (Dial: lazily, an extension that is
// down fails the calls, not Connect) and chains their runners in order.
// close releases the connections; it is a no-op when Connect failed.
func Connect(regs []Registration) (chain *Chain, close func(), err error) {
	var closers []func() error
	closeAll := func() {
		var errs []error
		for _, c := range closers {
			errs = append(errs, c())
		}
		_ = errors.Join(errs...) // closing a client connection only fails when it was closed already
	}
	runners := make([]*Runner, 0, len(regs))
	for _, reg := range regs {
		if err := reg.Validate(); err != nil {
			closeAll()
			return nil, func() {}, err
		}
		var conn *grpc.ClientConn
		var res *manual.Resolver
		var secrets *secretTLS
		var err error
		if reg.Service != "" {
			conn, res, secrets, err = dialService(reg)
		} else {
			conn, secrets, err = dial(reg)
		}
		if err != nil {
			closeAll()
			return nil, func() {}, err
		}
		closers = append(closers, conn.Close)
		r, err := NewRunner(reg, conn)
		if err != nil {
			closeAll()
			return nil, func() {}, err
		}
		r.conn, r.endpoints, r.secrets = conn, res, secrets
		runners = append(runners, r)
	}
	chain, err = NewChain(runners...)
	if err != nil {
		closeAll()
		return nil, func() {}, err
	}
	return chain, closeAll, nil
}

// WatchReady calls ready each time the runner's connection becomes ready
// (connectivity READY) again, e.g. its extension server restarted after
// calls failed, until ctx ends or the connection is closed. A connection
// that falls idle (its server went away) is told to connect again at
// once: gRPC reconnects only for a call otherwise, and it is the
// reconnection that tells the extension is back. It returns at once for a
// runner not made by Connect.
func (r *Runner) WatchReady(ctx context.Context, ready func()) {
	if r.conn == nil {
		return
	}
	st := r.conn.GetState()
	for r.conn.WaitForStateChange(ctx, st) {
		switch st = r.conn.GetState(); st {
		case connectivity.Ready:
			ready()
		case connectivity.Idle:
			r.conn.Connect()
		case connectivity.Shutdown:
			return
		}
	}
}
