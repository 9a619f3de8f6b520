package xdsserver

import (
	"fmt"
	"slices"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/proto"

	"github.com/portcullis/portcullis/controlplane/internal/translator"
)

// checker checks that a set of resources references only one another, as
// go-control-plane's Snapshot.Consistent does: the route configurations
// are exactly those the listeners' HTTP connection managers name (over
// RDS or in a scoped routes list), and the endpoints exactly those the EDS
// clusters name. An inconsistent set is a translator bug, not a user
// error, and is not published.
//
// Finding the names a listener uses decodes its HTTP connection managers:
// at 10,000 TLS hosts, 10,000 of them, most of a change's publication. So
// they are kept, for the listeners of the last check, by name and hash
// (the listener's content: its version, hashResources). For one goroutine
// at a time.
type checker struct {
	routes map[listenerKey][]string
}

// listenerKey is a listener's name and hash.
type listenerKey struct{ name, version string }

// check returns an error unless the resources of r are consistent;
// versions are the hashes of r's listeners, by name.
func (c *checker) check(r *translator.Resources, versions map[string]string) error {
	kept := make(map[listenerKey][]string, len(r.Listeners))
	var routes []string
	for _, m := range r.Listeners {
		k := listenerKey{translator.ResourceName(m), versions[translator.ResourceName(m)]}
		names, ok := c.routes[k]
		if !ok {
			names = routeNames(m.(*listenerv3.Listener))
		}
		kept[k] = names
		routes = append(routes, names...)
	}
	c.routes = kept
	if err := sameNames(resourcev3.RouteType, routes, r.Routes); err != nil {
		return err
	}
	endpoints := make([]string, 0, len(r.Endpoints))
	for _, m := range r.Clusters {
		if name, ok := edsName(m.(*clusterv3.Cluster)); ok {
			endpoints = append(endpoints, name)
		}
	}
	return sameNames(resourcev3.EndpointType, endpoints, r.Endpoints)
}

// routeNames are the route configurations l's HTTP connection managers
// name, as go-control-plane finds them.
func routeNames(l *listenerv3.Listener) []string {
	var names []string
	for _, chain := range append(slices.Clip(l.GetFilterChains()), l.GetDefaultFilterChain()) {
		for _, f := range chain.GetFilters() {
			hcm := resourcev3.GetHTTPConnectionManager(f)
			if hcm == nil {
				continue
			}
			if name := hcm.GetRds().GetRouteConfigName(); name != "" {
				names = append(names, name)
			}
			for _, s := range hcm.GetScopedRoutes().GetScopedRouteConfigurationsList().GetScopedRouteConfigurations() {
				names = append(names, s.GetRouteConfigurationName())
			}
		}
	}
	return names
}

// edsName is the name of the endpoints an EDS cluster uses.
func edsName(c *clusterv3.Cluster) (string, bool) {
	if c.GetType() != clusterv3.Cluster_EDS {
		return "", false
	}
	if name := c.GetEdsClusterConfig().GetServiceName(); name != "" {
		return name, true
	}
	return c.GetName(), true
}

// sameNames returns an error unless the names referenced and the names of
// the resources of typeURL are the same set. Both are usually sorted
// already (the translator sorts its lists by name).
func sameNames(typeURL string, referenced []string, resources []proto.Message) error {
	have := make([]string, len(resources))
	for i, m := range resources {
		have[i] = translator.ResourceName(m)
	}
	referenced, have = sortedSet(referenced), sortedSet(have)
	for i, j := 0, 0; i < len(referenced) || j < len(have); {
		switch {
		case j == len(have) || i < len(referenced) && referenced[i] < have[j]:
			return fmt.Errorf("inconsistent snapshot: %q is referenced but not a resource of %s", referenced[i], typeURL)
		case i == len(referenced) || have[j] < referenced[i]:
			return fmt.Errorf("inconsistent snapshot: %s %q is not referenced", typeURL, have[j])
		}
		i, j = i+1, j+1
	}
	return nil
}

// sortedSet sorts names (unless sorted) and drops repeated ones.
func sortedSet(names []string) []string {
	if !slices.IsSorted(names) {
		slices.Sort(names)
	}
	return slices.Compact(names)
}
