package translator

import (
	"reflect"
	"slices"
	"testing"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// Every HCM, whichever filters it needs, lists them in the registry's
// order, the router last; and a route configures exactly the filters of
// its HCM that have something to say about it.
func TestHTTPFilterOrder(t *testing.T) {
	auth := &ir.ExtAuth{Cluster: "extension/auth/authz"}
	proc := &ir.ExtProc{Cluster: "extension/proc/processor"}
	plain := &ir.Route{Path: "/"}
	procOff := &ir.Route{Path: "/", ExtProc: &ir.ExtProcPerRoute{Disabled: true}}
	// A route with its own authorization and processor, and the HCM with
	// their filters.
	own := &ir.Route{Path: "/", Auth: &ir.ExtAuth{Cluster: "extension/auth/own"}, Processor: &ir.ExtProc{Cluster: "extension/proc/own"}}
	withOwn := hcmSettings{auth: auth, proc: proc}.withRoutes([]*ir.VirtualHost{{Routes: []*ir.Route{plain, own}}})
	ownAuth, ownProc := routeAuthName(own.Auth), routeProcName(own.Processor)
	for _, tc := range []struct {
		name         string
		h            hcmSettings
		route        *ir.Route
		wantFilters  []string
		wantPerRoute []string
	}{
		{"nothing: the router alone", hcmSettings{}, procOff, []string{RouterFilterName}, nil},
		{"authorization", hcmSettings{auth: auth}, plain, []string{ExtAuthzFilterName, RouterFilterName}, []string{ExtAuthzFilterName}},
		{"a processor, route without its own processing", hcmSettings{proc: proc}, plain, []string{ExtProcFilterName, RouterFilterName}, nil},
		{"a processor, route switching it off", hcmSettings{proc: proc}, procOff, []string{ExtProcFilterName, RouterFilterName}, []string{ExtProcFilterName}},
		{"both: authorization before processing", hcmSettings{auth: auth, proc: proc}, procOff,
			[]string{ExtAuthzFilterName, ExtProcFilterName, RouterFilterName}, []string{ExtAuthzFilterName, ExtProcFilterName}},
		{"a route's own filters: each beside the HCM's of its kind", withOwn, own,
			[]string{ExtAuthzFilterName, ownAuth, ExtProcFilterName, ownProc, RouterFilterName}, []string{ExtAuthzFilterName, ownAuth, ExtProcFilterName, ownProc}},
		{"another route of that HCM: only the HCM's filters", withOwn, plain,
			[]string{ExtAuthzFilterName, ownAuth, ExtProcFilterName, ownProc, RouterFilterName}, []string{ExtAuthzFilterName}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, f := range hcmOf(t, hcmFilter("test", "test", tc.h)).HttpFilters {
				got = append(got, f.Name)
			}
			if !slices.Equal(got, tc.wantFilters) {
				t.Errorf("HCM filters: got %v, want %v", got, tc.wantFilters)
			}
			r := route(tc.route, routeSettings{filters: tc.h.filters()})
			var per []string
			for name := range r.TypedPerFilterConfig {
				per = append(per, name)
			}
			slices.Sort(per)
			if !slices.Equal(per, tc.wantPerRoute) {
				t.Errorf("typed_per_filter_config: got %v, want %v", per, tc.wantPerRoute)
			}
		})
	}
}

// The registry is the one place of the order; a filterSet has a bit for
// each filter.
func TestHTTPFilterRegistry(t *testing.T) {
	if len(httpFilters) > 64 {
		t.Fatalf("%d HTTP filters do not fit a filterSet", len(httpFilters))
	}
	seen := map[string]bool{}
	for _, f := range httpFilters {
		if seen[f.name()] {
			t.Errorf("%s registered twice", f.name())
		}
		seen[f.name()] = true
	}
	if last := httpFilters[len(httpFilters)-1]; last.name() != RouterFilterName {
		t.Errorf("the last filter is %s, want the router", last.name())
	}
}

func hcmOf(t *testing.T, f *listenerv3.Filter) *hcmv3.HttpConnectionManager {
	t.Helper()
	hcm := &hcmv3.HttpConnectionManager{}
	if err := f.GetTypedConfig().UnmarshalTo(hcm); err != nil {
		t.Fatal(err)
	}
	return hcm
}

// TestPerFilterConfigShared: routes whose only entry is the shared
// ext_authz "disabled" or "check" share one map; a route with a context
// of its own gets its own map, with its context.
func TestPerFilterConfigShared(t *testing.T) {
	s := hcmSettings{auth: &ir.ExtAuth{Cluster: "extension/ns/auth"}}.filters()
	off1 := perFilterConfig(&ir.Route{AuthDisabled: true}, s)
	off2 := perFilterConfig(&ir.Route{AuthDisabled: true}, s)
	on := perFilterConfig(&ir.Route{}, s)
	if reflect.ValueOf(off1).UnsafePointer() != reflect.ValueOf(off2).UnsafePointer() {
		t.Error("two disabled routes have maps of their own")
	}
	if off1[ExtAuthzFilterName] != packedExtAuthzDisabled() || on[ExtAuthzFilterName] != packedExtAuthzCheck() {
		t.Errorf("shared maps hold %v and %v", off1, on)
	}
	ctx := perFilterConfig(&ir.Route{AuthContext: map[string]string{"k": "v"}}, s)
	if reflect.ValueOf(ctx).UnsafePointer() == reflect.ValueOf(on).UnsafePointer() || !proto.Equal(ctx[ExtAuthzFilterName], mustAny(extAuthzCheck(&ir.Route{AuthContext: map[string]string{"k": "v"}}))) {
		t.Errorf("a route's own context: %v", ctx)
	}
}
