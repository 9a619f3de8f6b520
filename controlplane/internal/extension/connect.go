package extension

import (
	"errors"

	"google.golang.org/grpc"
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
		var err error
		if reg.Service != "" {
			conn, res, err = dialService(reg)
		} else {
			conn, err = Dial(reg)
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
		r.endpoints = res
		runners = append(runners, r)
	}
	chain, err = NewChain(runners...)
	if err != nil {
		closeAll()
		return nil, func() {}, err
	}
	return chain, closeAll, nil
}
