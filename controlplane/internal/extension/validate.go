package extension

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"

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

// shallowClone returns a new message whose fields are m's: the fields'
// values (messages, lists) are shared, so set a field to change it, never
// change one in place.
func shallowClone[M proto.Message](m M) M {
	src := m.ProtoReflect()
	dst := src.New()
	src.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		dst.Set(fd, v)
		return true
	})
	return dst.Interface().(M)
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

// authzEntries are the ext_authz entries of a typed_per_filter_config (the
// HCM's filter and those routes name, all named with
// translator.ExtAuthzFilterName as prefix), as one comparable string.
func authzEntries(m map[string]*anypb.Any) string {
	var keys []string
	for k := range m {
		if strings.HasPrefix(k, translator.ExtAuthzFilterName) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		v, _ := proto.MarshalOptions{Deterministic: true}.Marshal(m[k])
		fmt.Fprintf(&b, "%s=%x;", k, v)
	}
	return b.String()
}

// checkRoute checks a PostRouteModify answer: valid, the same name, its
// clusters exist, its ext_authz settings as Portcullis made them.
func (ru *run) checkRoute(in, out *routev3.Route) error {
	if err := validate(out); err != nil {
		return invalidf("the route does not validate: %v", err)
	}
	if out.GetName() != in.GetName() {
		return invalidf("the route's name changed from %q to %q", in.GetName(), out.GetName())
	}
	if authzEntries(out.GetTypedPerFilterConfig()) != authzEntries(in.GetTypedPerFilterConfig()) {
		return invalidf("the route's ext_authz settings (typed_per_filter_config %s*) changed: an extension may not remove or change them", translator.ExtAuthzFilterName)
	}
	return checkClusters([]*routev3.Route{out}, ru.known, ru.danglingSet())
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
	if err := checkVirtualHostAuthz(in, out); err != nil {
		return err
	}
	return checkClusters(out.GetRoutes(), ru.known, ru.danglingSet())
}

// checkVirtualHostAuthz checks that out keeps in's ext_authz settings:
// those of the virtual host, and on each route those of one of in's routes
// (a route added or changed carries settings Portcullis made for this
// virtual host; none when it had no route).
func checkVirtualHostAuthz(in, out *routev3.VirtualHost) error {
	if authzEntries(out.GetTypedPerFilterConfig()) != authzEntries(in.GetTypedPerFilterConfig()) {
		return invalidf("the virtual host %q's ext_authz settings (typed_per_filter_config %s*) changed", in.GetName(), translator.ExtAuthzFilterName)
	}
	allowed := map[string]bool{}
	for _, r := range in.GetRoutes() {
		allowed[authzEntries(r.GetTypedPerFilterConfig())] = true
	}
	if len(in.GetRoutes()) == 0 {
		allowed[""] = true
	}
	for i, r := range out.GetRoutes() {
		if !allowed[authzEntries(r.GetTypedPerFilterConfig())] {
			return invalidf("route %d of virtual host %q has ext_authz settings (typed_per_filter_config %s*) that none of Portcullis's routes there has: an extension may not remove, disable or change them", i, in.GetName(), translator.ExtAuthzFilterName)
		}
	}
	return nil
}

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

// authzFilters are an HCM's ext_authz filters, as one comparable string.
func authzFilters(h *hcmv3.HttpConnectionManager) string {
	var b strings.Builder
	for _, f := range h.GetHttpFilters() {
		if strings.HasPrefix(f.GetName(), translator.ExtAuthzFilterName) {
			v, _ := proto.MarshalOptions{Deterministic: true}.Marshal(f)
			fmt.Fprintf(&b, "%x;", v)
		}
	}
	return b.String()
}

// checkListenerHCMs checks out's HTTP connection managers: each uses a
// route configuration of rcs by RDS; and on the filter chains of in (by
// name) the same route configuration and the same ext_authz filters.
func checkListenerHCMs(in, out *listenerv3.Listener, rcs map[string]bool) error {
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
	if in == nil {
		return nil
	}
	inH, err := hcms(in)
	if err != nil {
		return invalidf("%v", err)
	}
	for chain, h := range inH {
		o, ok := outH[chain]
		if !ok {
			continue // the chain, or its HCM, is gone: it serves nothing
		}
		if o.GetRds().GetRouteConfigName() != h.GetRds().GetRouteConfigName() {
			return invalidf("filter chain %q: the route configuration changed from %q to %q", chain, h.GetRds().GetRouteConfigName(), o.GetRds().GetRouteConfigName())
		}
		if authzFilters(o) != authzFilters(h) {
			return invalidf("filter chain %q: the ext_authz filters (%s*) changed: an extension may not remove, disable or change them", chain, translator.ExtAuthzFilterName)
		}
	}
	return nil
}

// checkListener checks a PostHTTPListenerModify answer.
func checkListener(in, out *listenerv3.Listener, rcs map[string]bool) error {
	if err := validate(out); err != nil {
		return invalidf("the listener does not validate: %v", err)
	}
	if out.GetName() != in.GetName() {
		return invalidf("the listener's name changed from %q to %q", in.GetName(), out.GetName())
	}
	if !proto.Equal(out.GetAddress(), in.GetAddress()) {
		return invalidf("the listener's address changed")
	}
	return checkListenerHCMs(in, out, rcs)
}

// checkAll checks a PostTranslateModify answer; an invalid one names the
// resource that makes it so.
func (ru *run) checkAll(req *v1alpha1.PostTranslateModifyRequest, resp *v1alpha1.PostTranslateModifyResponse) error {
	if err := checkLists(resp); err != nil {
		return err
	}
	rcs, err := ru.checkRouteConfigurations(req, resp)
	if err != nil {
		return err
	}
	inLs := map[string]*listenerv3.Listener{}
	for _, l := range req.GetListeners() {
		inLs[l.GetName()] = l
	}
	for _, l := range resp.GetListeners() {
		if err := checkListenerHCMs(inLs[l.GetName()], l, rcs); err != nil {
			return invalidAt(resourcev3.ListenerType, "Listener", l.GetName(), err)
		}
	}
	return nil
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

// checkRouteConfigurations checks the answer's route configurations
// against its clusters and the request's route configurations of the same
// names; it returns their names.
func (ru *run) checkRouteConfigurations(req *v1alpha1.PostTranslateModifyRequest, resp *v1alpha1.PostTranslateModifyResponse) (map[string]bool, error) {
	clusters := map[string]bool{}
	for _, c := range resp.GetClusters() {
		clusters[c.GetName()] = true
	}
	inRCs := map[string]*routev3.RouteConfiguration{}
	for _, rc := range req.GetRouteConfigurations() {
		inRCs[rc.GetName()] = rc
	}
	rcs := map[string]bool{}
	for _, rc := range resp.GetRouteConfigurations() {
		rcs[rc.GetName()] = true
		if err := ru.checkRouteConfiguration(inRCs[rc.GetName()], rc, clusters); err != nil {
			return nil, invalidAt(resourcev3.RouteType, "RouteConfiguration", rc.GetName(), err)
		}
	}
	return rcs, nil
}

// checkRouteConfiguration checks that the routes of rc send to clusters
// that exist, and that each domain keeps the ext_authz settings of the
// virtual host of in that served it.
func (ru *run) checkRouteConfiguration(in, rc *routev3.RouteConfiguration, clusters map[string]bool) error {
	byDomain := map[string]*routev3.VirtualHost{}
	for _, vh := range in.GetVirtualHosts() {
		for _, d := range vh.GetDomains() {
			byDomain[d] = vh
		}
	}
	for _, vh := range rc.GetVirtualHosts() {
		if err := checkClusters(vh.GetRoutes(), clusters, ru.danglingSet()); err != nil {
			return fmt.Errorf("virtual host %q: %v", vh.GetName(), err)
		}
		for _, d := range vh.GetDomains() {
			if orig := byDomain[d]; orig != nil {
				if err := checkVirtualHostAuthz(orig, vh); err != nil {
					return fmt.Errorf("domain %q: %v", d, err)
				}
			}
		}
	}
	return nil
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
