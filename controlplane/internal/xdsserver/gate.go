package xdsserver

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
)

// gate holds every watch until the first configuration is published, then
// hands them to the cache: go-control-plane's linear caches answer a first
// request at once, and an Envoy that reconnects to a control plane that
// has just started must not be sent an empty configuration (it would drop
// its listeners) before the first build.
type gate struct {
	cache cachev3.Cache

	opened  atomic.Bool // read without mu once open
	mu      sync.Mutex
	open    bool
	pending []*heldWatch
}

// heldWatch is a watch waiting for the gate to open.
type heldWatch struct {
	req      *cachev3.Request
	deltaReq *cachev3.DeltaRequest
	sub      cachev3.Subscription
	resp     chan cachev3.Response
	deltaCh  chan cachev3.DeltaResponse
	// cancel is the cache's, once handed over; cancelled: before that.
	cancel    func()
	cancelled bool
}

func (g *gate) CreateWatch(req *cachev3.Request, sub cachev3.Subscription, ch chan cachev3.Response) (func(), error) {
	return g.hold(&heldWatch{req: req, sub: sub, resp: ch})
}

func (g *gate) CreateDeltaWatch(req *cachev3.DeltaRequest, sub cachev3.Subscription, ch chan cachev3.DeltaResponse) (func(), error) {
	return g.hold(&heldWatch{deltaReq: req, sub: sub, deltaCh: ch})
}

func (g *gate) Fetch(context.Context, *cachev3.Request) (cachev3.Response, error) {
	return nil, errors.New("fetch is not supported: use ADS")
}

func (g *gate) hold(w *heldWatch) (func(), error) {
	if g.opened.Load() {
		return g.handOver(w)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.open {
		return g.handOver(w)
	}
	g.pending = append(g.pending, w)
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if w.cancel != nil {
			w.cancel()
		}
		w.cancelled = true
	}, nil
}

// handOver creates w in the cache.
func (g *gate) handOver(w *heldWatch) (func(), error) {
	var cancel func()
	var err error
	if w.deltaReq != nil {
		cancel, err = g.cache.CreateDeltaWatch(w.deltaReq, w.sub, w.deltaCh)
	} else {
		cancel, err = g.cache.CreateWatch(w.req, w.sub, w.resp)
	}
	if cancel == nil {
		cancel = func() {}
	}
	return cancel, err
}

// openUp hands the held watches to the cache, in the order they came, and
// lets later ones through. Called once the cache has a configuration.
func (g *gate) openUp() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.open {
		return nil
	}
	g.open = true
	var errs []error
	for _, w := range g.pending {
		if w.cancelled {
			continue
		}
		cancel, err := g.handOver(w)
		w.cancel = cancel
		errs = append(errs, err)
	}
	g.pending = nil
	g.opened.Store(true)
	return errors.Join(errs...)
}
