package pipeline

import (
	"slices"
	"sort"
	"strings"
	"sync"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	cachetypes "github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/proto"

	"github.com/portcullis/portcullis/controlplane/internal/builder"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/translator"
)

// Attribution maps the Envoy resources of one result back to the objects
// they came from, so that a rejection by Envoy (an ADS NACK) can be shown
// on the HTTPProxies or ExtensionServices behind it. It is a pure side
// table of a Result, computed on first use: most builds are never
// rejected.
type Attribution struct {
	result *Result
	once   sync.Once
	// direct maps type URL -> resource name -> objects, for resources that
	// come from one place (clusters, endpoints, secrets).
	direct map[string]map[string][]objects.Ref
	// hosts maps type URL -> resource name -> FQDNs of the virtual hosts in
	// it (listeners and route configurations hold many).
	hosts  map[string]map[string][]string
	vhosts map[string][]objects.Ref
	// merged maps the name of an Envoy virtual host that serves several
	// hosts (identical routes, see translator) to their FQDNs: Envoy's
	// message names only the virtual host, but its routes are every one's.
	merged map[string][]string
}

// NewAttribution returns the attribution of a result.
func NewAttribution(r *Result) *Attribution { return &Attribution{result: r} }

func (a *Attribution) compute() {
	r := a.result
	src := r.Build.Sources
	if src == nil {
		src = &builder.Sources{}
	}
	a.direct = map[string]map[string][]objects.Ref{
		resourcev3.ClusterType:  src.Clusters(),
		resourcev3.EndpointType: src.Clusters(),
		resourcev3.SecretType:   src.Secrets(),
	}
	a.hosts = map[string]map[string][]string{resourcev3.ListenerType: {}, resourcev3.RouteType: {}}
	a.vhosts = src.VirtualHosts()
	m := r.Build.Model
	var insecure, secure, fallback []string
	for _, vh := range m.Insecure {
		insecure = append(insecure, vh.FQDN)
	}
	for _, vh := range m.Secure {
		secure = append(secure, vh.FQDN)
		a.hosts[resourcev3.RouteType][translator.SecureRouteConfigName(vh.FQDN)] = []string{vh.FQDN}
	}
	if m.Fallback != nil {
		for _, vh := range m.Fallback.VirtualHosts {
			fallback = append(fallback, vh.FQDN)
		}
		a.hosts[resourcev3.RouteType][translator.FallbackRouteConfigName] = fallback
	}
	a.hosts[resourcev3.RouteType][translator.HTTPRouteConfigName] = insecure
	a.hosts[resourcev3.ListenerType][translator.HTTPListenerName] = insecure
	a.hosts[resourcev3.ListenerType][translator.HTTPSListenerName] = append(secure, fallback...)
	a.merged = map[string][]string{}
	if r.Resources != nil {
		for _, res := range r.Resources.Routes {
			rc, ok := res.(*routev3.RouteConfiguration)
			if !ok {
				continue
			}
			for _, vh := range rc.VirtualHosts {
				var fqdns []string
				for _, d := range vh.Domains {
					if !strings.HasSuffix(d, ":*") {
						fqdns = append(fqdns, d)
					}
				}
				if len(fqdns) > 1 {
					a.merged[vh.Name] = fqdns
				}
			}
		}
	}
}

// Objects returns the objects behind the named resources of one type that
// Envoy rejected with message. For a listener or route configuration that
// holds many virtual hosts, the hosts the message names are blamed if it
// names any, else all of them (all are affected: Envoy keeps the old
// resource).
func (a *Attribution) Objects(typeURL string, names []string, message string) []objects.Ref {
	a.once.Do(a.compute)
	seen := map[objects.Ref]bool{}
	var out []objects.Ref
	add := func(refs []objects.Ref) {
		for _, r := range refs {
			if !seen[r] {
				seen[r] = true
				out = append(out, r)
			}
		}
	}
	for _, name := range names {
		add(a.direct[typeURL][name])
		fqdns := a.hosts[typeURL][name]
		var named []string
		for _, f := range fqdns {
			if strings.Contains(message, f) {
				named = append(named, f)
			}
		}
		for _, f := range named {
			named = append(named, a.merged[f]...)
		}
		if len(named) == 0 {
			named = fqdns
		}
		for _, f := range named {
			add(a.vhosts[f])
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// Served reports whether any of the named resources of one type is in the
// result. A rejection of resources that are not (their objects were deleted
// since) is settled by Envoy's next answer, not an operator.
func (a *Attribution) Served(typeURL string, names []string) bool {
	if a == nil || a.result.Resources == nil {
		return false
	}
	var rs []proto.Message
	switch typeURL {
	case resourcev3.ListenerType:
		rs = a.result.Resources.Listeners
	case resourcev3.RouteType:
		rs = a.result.Resources.Routes
	case resourcev3.ClusterType:
		rs = a.result.Resources.Clusters
	case resourcev3.EndpointType:
		rs = a.result.Resources.Endpoints
	case resourcev3.SecretType:
		rs = a.result.Resources.Secrets
	default:
		return false
	}
	for _, r := range rs {
		if slices.Contains(names, cachev3.GetResourceName(r.(cachetypes.Resource))) {
			return true
		}
	}
	return false
}
