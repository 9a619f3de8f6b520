package extension

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/translator"
)

// Chain runs several extensions' hooks, in registration order: each
// extension's Apply takes the previous one's output, so a later extension
// sees (and may change) what an earlier one did.
type Chain struct {
	runners []*Runner
	metric  *prometheus.CounterVec
}

// NewChain chains runners (ValidateAll's rules: unique names, one owner
// per kind). Their calls are counted in one metric, labelled by
// extension.
func NewChain(runners ...*Runner) (*Chain, error) {
	regs := make([]Registration, len(runners))
	for i, r := range runners {
		regs[i] = r.reg
	}
	if err := ValidateAll(regs); err != nil {
		return nil, err
	}
	c := &Chain{runners: runners, metric: newCallsMetric()}
	for _, r := range runners {
		r.useMetric(c.metric)
	}
	return c, nil
}

// Runners are the chain's runners, in order.
func (c *Chain) Runners() []*Runner { return c.runners }

// Collector is the chain's metric, for the control plane's registry.
func (c *Chain) Collector() prometheus.Collector { return c.metric }

// Apply runs each extension's hooks (Runner.Apply) on the previous one's
// output. Its failures are every extension's. A failure of an extension
// whose policy is Closed makes the result nil (keep the last good
// configuration); the later extensions still run on the last output, so
// that their failures are reported too.
func (c *Chain) Apply(ctx context.Context, res *translator.Resources, refs Refs) (*translator.Resources, []Failure) {
	var all []Failure
	closed := false
	for _, r := range c.runners {
		out, failures := r.Apply(ctx, res, refs)
		all = append(all, failures...)
		if out == nil {
			closed = true
			continue
		}
		res = out
	}
	if closed {
		return nil, all
	}
	return res, all
}

// RefsOf are what the model m gives the extensions: its routes with
// extension resources (by route name) and its clusters of extension
// backends (by cluster name).
func RefsOf(m *ir.Model) Refs {
	refs := Refs{Routes: map[string]*ir.RouteExtension{}, Clusters: map[string]*ir.ExtensionResource{}}
	if m == nil {
		return refs
	}
	add := func(vh *ir.VirtualHost) {
		for _, r := range vh.Routes {
			if r.Extension != nil && r.Name != "" {
				refs.Routes[r.Name] = r.Extension
			}
		}
	}
	for _, vh := range m.Insecure {
		add(vh)
	}
	for _, vh := range m.Secure {
		add(&vh.VirtualHost)
	}
	for _, l := range m.Listeners {
		for _, vh := range l.Insecure {
			add(vh)
		}
		for _, vh := range l.Secure {
			add(&vh.VirtualHost)
		}
	}
	for _, c := range m.Clusters {
		if c.Extension != nil {
			refs.Clusters[c.Name] = c.Extension
		}
	}
	return refs
}
