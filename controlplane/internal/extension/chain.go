package extension

import (
	"context"
	"fmt"
	"strings"
	"sync"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/proto"

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

	// stages are the last Apply's input and each runner's output (nil
	// when it failed under Closed), for Touched.
	mu     sync.Mutex
	stages []*translator.Resources
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
	stages := []*translator.Resources{res}
	for _, r := range c.runners {
		out, failures := r.Apply(ctx, res, refs)
		all = append(all, failures...)
		stages = append(stages, out)
		if out == nil {
			closed = true
			continue
		}
		res = out
	}
	c.mu.Lock()
	c.stages = stages
	c.mu.Unlock()
	if closed {
		return nil, all
	}
	return res, all
}

// Stages are the last Apply's input and each runner's output, in chain
// order (nil for a runner that failed under Closed; the next one ran on
// the last good output): what each extension changed.
func (c *Chain) Stages() []*translator.Resources {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stages
}

// Touched names the extensions whose hooks changed the resource of type
// typeURL named name in the last Apply, with the subscribed hooks that can
// change such a resource, e.g. `extension "auth" (PostHTTPListenerModify)`;
// none when no extension changed it. For Envoy's rejections: an
// extension's change is the first suspect. The comparison is made here,
// on demand, so that Apply pays nothing for it.
func (c *Chain) Touched(typeURL, name string) []string {
	c.mu.Lock()
	stages := c.stages
	c.mu.Unlock()
	var out []string
	prev := find(stages, 0, typeURL, name)
	for i, r := range c.runners {
		if i+1 >= len(stages) || stages[i+1] == nil {
			continue
		}
		cur := find(stages, i+1, typeURL, name)
		if (prev == nil) != (cur == nil) || prev != nil && !proto.Equal(prev, cur) {
			var hooks []string
			for _, h := range hooksChanging[typeURL] {
				if r.reg.Subscribed(h) {
					hooks = append(hooks, string(h))
				}
			}
			out = append(out, fmt.Sprintf("extension %q (%s)", r.reg.Name, strings.Join(hooks, ", ")))
		}
		prev = cur
	}
	return out
}

// hooksChanging are the hooks that can change a resource of each type.
var hooksChanging = map[string][]Hook{
	resourcev3.ClusterType:  {HookPostTranslateInsert, HookPostClusterModify, HookPostTranslateModify},
	resourcev3.SecretType:   {HookPostTranslateInsert, HookPostTranslateModify},
	resourcev3.EndpointType: {HookPostEndpointsModify, HookPostTranslateModify},
	resourcev3.ListenerType: {HookPostHTTPListenerModify, HookPostTranslateModify},
	resourcev3.RouteType:    {HookPostRouteModify, HookPostVirtualHostModify, HookPostTranslateModify},
}

// find is the resource of stage i named name, or nil.
func find(stages []*translator.Resources, i int, typeURL, name string) proto.Message {
	if i >= len(stages) || stages[i] == nil {
		return nil
	}
	var list []proto.Message
	switch typeURL {
	case resourcev3.ClusterType:
		list = stages[i].Clusters
	case resourcev3.SecretType:
		list = stages[i].Secrets
	case resourcev3.ListenerType:
		list = stages[i].Listeners
	case resourcev3.RouteType:
		list = stages[i].Routes
	case resourcev3.EndpointType:
		list = stages[i].Endpoints
	}
	for _, m := range list {
		if translator.ResourceName(m) == name {
			return m
		}
	}
	return nil
}

// RefsOf are what the model m gives the extensions: its routes with
// extension resources (by route name) and its clusters of extension
// backends (by cluster name).
func RefsOf(m *ir.Model) Refs {
	refs := Refs{Routes: map[string]*ir.RouteExtension{}, Clusters: map[string]*ir.ExtensionResource{}, Listeners: map[string][]ir.ExtensionResource{}}
	if m == nil {
		return refs
	}
	refs.Policies = m.ExtensionPolicies
	add := func(vh *ir.VirtualHost) {
		for _, r := range vh.Routes {
			if r.Extension != nil && r.Name != "" {
				refs.Routes[r.Name] = r.Extension
			}
		}
	}
	for _, l := range m.Listeners {
		if len(l.Extensions) > 0 {
			refs.Listeners[l.Name] = l.Extensions
		}
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
