package extension

import (
	"fmt"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	"slices"
	"strings"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/proto"

	"github.com/portcullis/portcullis/controlplane/internal/extension/guard"
	"github.com/portcullis/portcullis/controlplane/internal/translator"
	"github.com/portcullis/portcullis/extension/api/v1alpha1"
)

// names are the names of the translator's resources.
type names struct {
	clusters, secrets map[string]bool
}

func newNames(res *translator.Resources) names {
	return names{clusters: namesOf(res.Clusters), secrets: namesOf(res.Secrets)}
}

func namesOf(ms []proto.Message) map[string]bool {
	out := make(map[string]bool, len(ms))
	for _, m := range ms {
		out[translator.ResourceName(m)] = true
	}
	return out
}

// validate runs an Envoy message's proto validation (protoc-gen-validate's
// rules, every violation).
func validate(m proto.Message) error {
	if v, ok := m.(interface{ ValidateAll() error }); ok {
		return v.ValidateAll()
	}
	return nil
}

// routeClusters are the clusters a route sends to (or mirrors to).
func routeClusters(r *routev3.Route) []string {
	a := r.GetRoute()
	if a == nil {
		return nil
	}
	var out []string
	if c := a.GetCluster(); c != "" {
		out = append(out, c)
	}
	for _, w := range a.GetWeightedClusters().GetClusters() {
		out = append(out, w.GetName())
	}
	for _, m := range a.GetRequestMirrorPolicies() {
		if c := m.GetCluster(); c != "" {
			out = append(out, c)
		}
	}
	return out
}

// danglingClusters are the clusters the translator's routes reference that
// it made none for: not the extension's doing, so not held against it.
func danglingClusters(rcs []proto.Message, clusters map[string]bool) map[string]bool {
	out := map[string]bool{}
	for _, m := range rcs {
		rc, _ := m.(*routev3.RouteConfiguration)
		for _, vh := range rc.GetVirtualHosts() {
			for _, r := range vh.GetRoutes() {
				for _, c := range routeClusters(r) {
					if !clusters[c] {
						out[c] = true
					}
				}
			}
		}
	}
	return out
}

// danglingSet are the clusters the translator's routes reference
// without a cluster (danglingClusters of the Apply's input), worked out
// once, when a check first needs them: going over every route of every
// virtual host is not for every rebuild when the answers pass their input
// through.
func (ru *run) danglingSet() map[string]bool {
	ru.danglingOnce.Do(func() { ru.dangling = danglingClusters(ru.translated, ru.ours.clusters) })
	return ru.dangling
}

// checkClusters checks that the routes send to clusters that exist.
func checkClusters(routes []*routev3.Route, known, dangling map[string]bool) error {
	for i, r := range routes {
		for _, c := range routeClusters(r) {
			if !known[c] && !dangling[c] {
				return invalidf("route %d sends to cluster %q, which does not exist", i, c)
			}
		}
	}
	return nil
}

// checkRoute checks a PostRouteModify answer for route k of virtual host
// vh: valid, the same name, its clusters exist, and no more open (the
// guard's invariant).
func (ru *run) checkRoute(vh *routev3.VirtualHost, k int, out *routev3.Route) error {
	in := vh.GetRoutes()[k]
	if err := validate(out); err != nil {
		return invalidf("the route does not validate: %v", err)
	}
	if out.GetName() != in.GetName() {
		return invalidf("the route's name changed from %q to %q", in.GetName(), out.GetName())
	}
	if err := checkClusters([]*routev3.Route{out}, ru.known, ru.danglingSet()); err != nil {
		return err
	}
	return opened(guard.CheckRoute(ru.filters(), ru.oursFunc(), vh, k, out))
}

// checkVirtualHost checks a PostVirtualHostModify answer.
func (ru *run) checkVirtualHost(in, out *routev3.VirtualHost) error {
	if err := validate(out); err != nil {
		return invalidf("the virtual host does not validate: %v", err)
	}
	if out.GetName() != in.GetName() {
		return invalidf("the virtual host's name changed from %q to %q", in.GetName(), out.GetName())
	}
	if !slices.Equal(out.GetDomains(), in.GetDomains()) {
		return invalidf("the virtual host's domains changed from %q to %q", in.GetDomains(), out.GetDomains())
	}
	if err := checkClusters(out.GetRoutes(), ru.known, ru.danglingSet()); err != nil {
		return err
	}
	return opened(guard.CheckVirtualHost(ru.filters(), ru.oursFunc(), in, out))
}

// opened is the guard's reasons as an invalid answer; nil for none.
func opened(reasons []string) error {
	if len(reasons) == 0 {
		return nil
	}
	return invalidf("it would serve requests more openly than Portcullis configured them (an extension may add, never open): %s", strings.Join(reasons, "; "))
}

// openedBy is the guard's violations as an invalid answer about the first
// resource; nil for none.
func openedBy(vs []guard.Violation) error {
	if len(vs) == 0 {
		return nil
	}
	v := vs[0]
	msgs := make([]string, len(vs))
	for i, x := range vs {
		msgs[i] = x.Error()
	}
	return &invalid{about: &subject{resource: fmt.Sprintf("%s %q", guardKind(v.TypeURL), v.Name), typeURL: v.TypeURL, names: []string{v.Name}},
		msg: "it would serve requests more openly than Portcullis configured them (an extension may add, never open): " + strings.Join(msgs, "; ")}
}

func guardKind(typeURL string) string { return typeURL[strings.LastIndex(typeURL, ".")+1:] }

// hcms are a listener's HTTP connection managers by filter chain name
// (the default filter chain as "<default>"); an error for one that does not
// decode.
func hcms(l *listenerv3.Listener) (map[string]*hcmv3.HttpConnectionManager, error) {
	out := map[string]*hcmv3.HttpConnectionManager{}
	chains := l.GetFilterChains()
	if d := l.GetDefaultFilterChain(); d != nil {
		chains = append(slices.Clip(chains), d)
	}
	for i, fc := range chains {
		key := fc.GetName()
		if i == len(l.GetFilterChains()) {
			key = "<default>"
		}
		for _, f := range fc.GetFilters() {
			tc := f.GetTypedConfig()
			if tc == nil || !tc.MessageIs((*hcmv3.HttpConnectionManager)(nil)) {
				continue
			}
			h := &hcmv3.HttpConnectionManager{}
			if err := tc.UnmarshalTo(h); err != nil {
				return nil, fmt.Errorf("filter chain %q: the HTTP connection manager does not decode: %v", key, err)
			}
			out[key] = h
		}
	}
	return out, nil
}

// hasHCM reports whether a listener has an HTTP connection manager, by
// the type of its filters' configurations (without decoding them: the
// HTTPS listener of 10,000 hosts has 10,000).
func hasHCM(l *listenerv3.Listener) bool {
	chains := l.GetFilterChains()
	if d := l.GetDefaultFilterChain(); d != nil {
		chains = append(slices.Clip(chains), d)
	}
	for _, fc := range chains {
		for _, f := range fc.GetFilters() {
			if tc := f.GetTypedConfig(); tc != nil && tc.MessageIs((*hcmv3.HttpConnectionManager)(nil)) {
				return true
			}
		}
	}
	return false
}

// checkListenerHCMs checks that each of out's HTTP connection managers
// uses a route configuration of rcs by RDS.
func checkListenerHCMs(out *listenerv3.Listener, rcs map[string]bool) error {
	outH, err := hcms(out)
	if err != nil {
		return invalidf("%v", err)
	}
	for chain, h := range outH {
		rds := h.GetRds()
		if rds == nil {
			return invalidf("filter chain %q: the HTTP connection manager must take its routes by RDS", chain)
		}
		if !rcs[rds.GetRouteConfigName()] {
			return invalidf("filter chain %q: route configuration %q does not exist", chain, rds.GetRouteConfigName())
		}
	}
	return nil
}

// checkListener checks a PostHTTPListenerModify answer; rcs are the route
// configurations its connection managers may use.
func (ru *run) checkListener(in, out *listenerv3.Listener, rcs []*routev3.RouteConfiguration) error {
	if err := validate(out); err != nil {
		return invalidf("the listener does not validate: %v", err)
	}
	if out.GetName() != in.GetName() {
		return invalidf("the listener's name changed from %q to %q", in.GetName(), out.GetName())
	}
	if !proto.Equal(out.GetAddress(), in.GetAddress()) {
		return invalidf("the listener's address changed")
	}
	names := make(map[string]bool, len(rcs))
	for _, rc := range rcs {
		names[rc.GetName()] = true
	}
	if err := checkListenerHCMs(out, names); err != nil {
		return err
	}
	return opened(reasons(guard.CheckListeners(ru.oursFunc(),
		guard.Config{Listeners: []*listenerv3.Listener{in}, Routes: rcs}, guard.Config{Listeners: []*listenerv3.Listener{out}, Routes: rcs})))
}

// reasons are the violations' reasons.
func reasons(vs []guard.Violation) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.Reason
	}
	return out
}

// checkAll checks a PostTranslateModify answer; an invalid one names the
// resource that makes it so.
func (ru *run) checkAll(req *v1alpha1.PostTranslateModifyRequest, resp *v1alpha1.PostTranslateModifyResponse) error {
	if err := checkLists(resp); err != nil {
		return err
	}
	if !ru.r.reg.MayRemoveAll {
		switch {
		case len(req.GetListeners()) > 0 && len(resp.GetListeners()) == 0:
			return invalidf("%s", removesAll("every listener"))
		case countVirtualHosts(req.GetRouteConfigurations()) > 0 && countVirtualHosts(resp.GetRouteConfigurations()) == 0:
			return invalidf("%s", removesAll("every virtual host"))
		}
	}
	rcs, err := ru.checkRouteConfigurations(resp)
	if err != nil {
		return err
	}
	for _, l := range resp.GetListeners() {
		if err := checkListenerHCMs(l, rcs); err != nil {
			return invalidAt(resourcev3.ListenerType, "Listener", l.GetName(), err)
		}
	}
	if err := ru.checkEndpoints(changedClusters(req.GetClusters(), resp.GetClusters())); err != nil {
		return err
	}
	return openedBy(guard.CheckListeners(ru.oursFunc(),
		guard.Config{Listeners: req.GetListeners(), Routes: req.GetRouteConfigurations()},
		guard.Config{Listeners: resp.GetListeners(), Routes: resp.GetRouteConfigurations()}))
}

func countVirtualHosts(rcs []*routev3.RouteConfiguration) int {
	n := 0
	for _, rc := range rcs {
		n += len(rc.GetVirtualHosts())
	}
	return n
}

// changedClusters are the clusters of out that in does not have as they
// are (added or changed).
func changedClusters(in, out []*clusterv3.Cluster) []*clusterv3.Cluster {
	was := make(map[string]*clusterv3.Cluster, len(in))
	for _, c := range in {
		was[c.GetName()] = c
	}
	var changed []*clusterv3.Cluster
	for _, c := range out {
		if w := was[c.GetName()]; w != c && !proto.Equal(w, c) {
			changed = append(changed, c)
		}
	}
	return changed
}

// checkEndpoints refuses clusters that reach the host itself, unless the
// registration allows them.
func (ru *run) checkEndpoints(cs []*clusterv3.Cluster) error {
	if ru.r.reg.AllowLocalEndpoints || len(cs) == 0 {
		return nil
	}
	vs := guard.CheckEndpoints(cs, ru.r.own)
	if len(vs) == 0 {
		return nil
	}
	v := vs[0]
	return invalidAt(v.TypeURL, "Cluster", v.Name, fmt.Errorf("%s (allowLocalEndpoints lets an extension reach the host itself)", v.Reason))
}

// invalidAt is err about the resource of typeURL named name.
func invalidAt(typeURL, kind, name string, err error) error {
	return &invalid{about: &subject{resource: fmt.Sprintf("%s %q", kind, name), typeURL: typeURL, names: []string{name}}, msg: err.Error()}
}

// checkLists checks each list of resources of the answer on its own.
func checkLists(resp *v1alpha1.PostTranslateModifyResponse) error {
	if err := checkList(resourcev3.ClusterType, "Cluster", resp.GetClusters(), invalidAt); err != nil {
		return err
	}
	if err := checkList(resourcev3.SecretType, "Secret", resp.GetSecrets(), invalidAt); err != nil {
		return err
	}
	if err := checkList(resourcev3.ListenerType, "Listener", resp.GetListeners(), invalidAt); err != nil {
		return err
	}
	return checkList(resourcev3.RouteType, "RouteConfiguration", resp.GetRouteConfigurations(), invalidAt)
}

// checkRouteConfigurations checks that the answer's routes send to its
// clusters; it returns the route configurations' names.
func (ru *run) checkRouteConfigurations(resp *v1alpha1.PostTranslateModifyResponse) (map[string]bool, error) {
	clusters := map[string]bool{}
	for _, c := range resp.GetClusters() {
		clusters[c.GetName()] = true
	}
	rcs := map[string]bool{}
	for _, rc := range resp.GetRouteConfigurations() {
		rcs[rc.GetName()] = true
		for _, vh := range rc.GetVirtualHosts() {
			if err := checkClusters(vh.GetRoutes(), clusters, ru.danglingSet()); err != nil {
				return nil, invalidAt(resourcev3.RouteType, "RouteConfiguration", rc.GetName(), fmt.Errorf("virtual host %q: %v", vh.GetName(), err))
			}
		}
	}
	return rcs, nil
}

// checkList checks that every resource of a list validates and has a name
// of its own.
func checkList[M interface {
	proto.Message
	GetName() string
}](typeURL, kind string, ms []M, at func(typeURL, kind, name string, err error) error) error {
	seen := map[string]bool{}
	for _, m := range ms {
		n := m.GetName()
		switch {
		case n == "":
			return invalidf("a %s without a name", kind)
		case seen[n]:
			return invalidf("two %ss named %q", kind, n)
		}
		seen[n] = true
		if err := validate(m); err != nil {
			return at(typeURL, kind, n, fmt.Errorf("does not validate: %v", err))
		}
	}
	return nil
}
