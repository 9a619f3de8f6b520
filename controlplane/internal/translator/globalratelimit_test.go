package translator

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ratelimit/v3"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// The ratelimit filter is in an HCM only when its hosts or routes send
// descriptors, failing closed unless the service fails open; hosts' and
// routes' descriptors become rate_limits; a route that disables them
// ignores its host's.
func TestGlobalRateLimitFilter(t *testing.T) {
	svc := &ir.RateLimitService{Cluster: "extension/rl/rl", Authority: "rl.rl", Domain: "d", Timeout: time.Second}
	ds := []ir.RateLimitDescriptor{{Entries: []ir.RateLimitEntry{{GenericKey: &ir.GenericKeyEntry{Value: "v"}}, {RemoteAddress: true}}}}
	plain := &ir.VirtualHost{FQDN: "a", Routes: []*ir.Route{{Clusters: []ir.WeightedCluster{{Cluster: "c", Weight: 1}}}}}
	if h := (hcmSettings{}).withRoutes([]*ir.VirtualHost{plain}); h.rateLimitService != nil {
		t.Error("a rate limit service without descriptors")
	}
	disabled := &ir.Route{GlobalRateLimits: &ir.GlobalRateLimits{Disabled: true}, Clusters: plain.Routes[0].Clusters}
	own := &ir.Route{GlobalRateLimits: &ir.GlobalRateLimits{Service: svc, Descriptors: ds}, Clusters: plain.Routes[0].Clusters}
	vh := &ir.VirtualHost{FQDN: "b", GlobalRateLimits: &ir.GlobalRateLimits{Service: svc, Descriptors: ds}, Routes: []*ir.Route{disabled, own}}
	h := (hcmSettings{}).withRoutes([]*ir.VirtualHost{plain, vh})
	fs := hcmHTTPFilters(h)
	if len(fs) != 2 || fs[0].GetName() != RateLimitFilterName {
		t.Fatalf("filters %v", fs)
	}
	var cfg ratelimitv3.RateLimit
	if err := fs[0].GetTypedConfig().UnmarshalTo(&cfg); err != nil || !cfg.GetFailureModeDeny() || cfg.GetDomain() != "d" ||
		cfg.GetRateLimitService().GetGrpcService().GetEnvoyGrpc().GetClusterName() != "extension/rl/rl" {
		t.Errorf("config %v (%v)", &cfg, err)
	}
	rc, _, rb := routeConfig("rc", []*ir.VirtualHost{plain, vh}, routeSettings{filters: h.filters()}, nil)
	checkAssembled(t, rc, rb)
	if len(rc.GetVirtualHosts()) != 2 || len(rc.GetVirtualHosts()[1].GetRateLimits()) != 1 || len(rc.GetVirtualHosts()[1].GetRateLimits()[0].GetActions()) != 2 {
		t.Fatalf("hosts %v", rc.GetVirtualHosts())
	}
	var per ratelimitv3.RateLimitPerRoute
	if err := route(disabled, routeSettings{filters: h.filters()}).GetTypedPerFilterConfig()[RateLimitFilterName].UnmarshalTo(&per); err != nil || per.GetVhRateLimits() != ratelimitv3.RateLimitPerRoute_IGNORE {
		t.Errorf("disabled route %v (%v)", &per, err)
	}
	if got := route(own, routeSettings{filters: h.filters()}).GetRoute().GetRateLimits(); len(got) != 1 || got[0].GetActions()[0].GetGenericKey().GetDescriptorValue() != "v" {
		t.Errorf("route rate limits %v", got)
	}
}

// TestRateLimitActionEveryKind: each kind of entry (each field of
// ir.RateLimitEntry, including any added later) becomes an action of its
// own kind, never another's.
func TestRateLimitActionEveryKind(t *testing.T) {
	seen := map[string]string{} // action kind -> entry field
	typ := reflect.TypeOf(ir.RateLimitEntry{})
	for i := range typ.NumField() {
		f := typ.Field(i)
		var e ir.RateLimitEntry
		switch v := reflect.ValueOf(&e).Elem().Field(i); f.Type.Kind() {
		case reflect.Pointer:
			v.Set(reflect.New(f.Type.Elem()))
		case reflect.Bool:
			v.SetBool(true)
		default:
			t.Fatalf("RateLimitEntry.%s: a field of kind %s this test cannot set", f.Name, f.Type.Kind())
		}
		kind, err := actionKind(e)
		if err != nil {
			t.Errorf("RateLimitEntry.%s: %v", f.Name, err)
			continue
		}
		if other, dup := seen[kind]; dup {
			t.Errorf("RateLimitEntry.%s and .%s both become %s", f.Name, other, kind)
		}
		seen[kind] = f.Name
	}
	if _, err := actionKind(ir.RateLimitEntry{}); err == nil {
		t.Error("an entry of no kind was translated")
	}
}

// actionKind is the Go type of the action specifier e becomes, or the
// panic translating it raised.
func actionKind(e ir.RateLimitEntry) (kind string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("not translated: %v", r)
		}
	}()
	return fmt.Sprintf("%T", rateLimitAction(e).GetActionSpecifier()), nil
}
