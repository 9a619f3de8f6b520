package httpproxy

import (
	"reflect"
	"strings"
	"testing"
	"time"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

func TestRouteLoadBalancer(t *testing.T) {
	header := func(n string) *contourv1.HeaderHashOptions { return &contourv1.HeaderHashOptions{HeaderName: n} }
	for _, tc := range []struct {
		name      string
		in        *contourv1.LoadBalancerPolicy
		lb        string
		hashes    []ir.HashPolicy
		wantError string
		warnings  int
	}{
		{name: "none"},
		{name: "round robin is the default", in: &contourv1.LoadBalancerPolicy{Strategy: "RoundRobin"}},
		{name: "least request", in: &contourv1.LoadBalancerPolicy{Strategy: "WeightedLeastRequest"}, lb: "WeightedLeastRequest"},
		{name: "random ignores hash policies", in: &contourv1.LoadBalancerPolicy{Strategy: "Random", RequestHashPolicies: []contourv1.RequestHashPolicy{{HashSourceIP: true}}}, lb: "Random", warnings: 1},
		{name: "cookie", in: &contourv1.LoadBalancerPolicy{Strategy: "Cookie"}, lb: "RingHash",
			hashes: []ir.HashPolicy{{Cookie: &ir.HashCookie{Name: "X-Contour-Session-Affinity", Path: "/"}}}},
		{name: "request hash keeps the valid policies", lb: "RingHash", warnings: 3, in: &contourv1.LoadBalancerPolicy{Strategy: "RequestHash", RequestHashPolicies: []contourv1.RequestHashPolicy{
			{HeaderHashOptions: header("X-User"), Terminal: true},
			{QueryParameterHashOptions: &contourv1.QueryParameterHashOptions{ParameterName: "s"}},
			{HashSourceIP: true},
			{HashSourceIP: true, HeaderHashOptions: header("X-Both")},
			{HeaderHashOptions: header("bad header")},
			{QueryParameterHashOptions: &contourv1.QueryParameterHashOptions{}},
		}}, hashes: []ir.HashPolicy{{Header: "x-user", Terminal: true}, {QueryParameter: "s"}, {SourceIP: true}}},
		{name: "request hash without a valid policy is round robin", in: &contourv1.LoadBalancerPolicy{Strategy: "RequestHash"}, warnings: 1},
		{name: "unknown strategy", in: &contourv1.LoadBalancerPolicy{Strategy: "Fastest"}, wantError: `R: LoadBalancerPolicy.Strategy "Fastest"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &status.Object{}
			errs := &routeErrors{st: st, where: "R"}
			var rt Route
			lb := routeLoadBalancer(&rt, tc.in, errs)
			if tc.wantError != "" {
				if len(st.Errors) != 1 || !strings.HasPrefix(st.Errors[0].Message, tc.wantError) || st.Errors[0].Reason != status.ReasonInvalidLoadBalancerPolicy {
					t.Fatalf("errors %+v, want %q", st.Errors, tc.wantError)
				}
				return
			}
			if len(st.Errors) > 0 || len(st.Warnings) != tc.warnings {
				t.Fatalf("errors %+v, warnings %+v, want %d warnings", st.Errors, st.Warnings, tc.warnings)
			}
			if lb != tc.lb || !reflect.DeepEqual(rt.HashPolicies, tc.hashes) {
				t.Errorf("got %q %+v, want %q %+v", lb, rt.HashPolicies, tc.lb, tc.hashes)
			}
		})
	}
}

func TestSlowStart(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      *contourv1.SlowStartPolicy
		lb      string
		want    *ir.SlowStart
		wantErr string
	}{
		{name: "none"},
		{name: "defaults", in: &contourv1.SlowStartPolicy{Window: "10s", MinimumWeightPercent: 10}, want: &ir.SlowStart{Window: 10 * time.Second, Aggression: 1, MinWeightPercent: 10}},
		{name: "least request", in: &contourv1.SlowStartPolicy{Window: "1m", Aggression: ".5"}, lb: "WeightedLeastRequest", want: &ir.SlowStart{Window: time.Minute, Aggression: 0.5}},
		{name: "not with random", in: &contourv1.SlowStartPolicy{Window: "1m"}, lb: "Random", wantErr: "slow start applies only to"},
		{name: "not with hashing", in: &contourv1.SlowStartPolicy{Window: "1m"}, lb: "RingHash", wantErr: "RequestHash or Cookie"},
		{name: "window", in: &contourv1.SlowStartPolicy{Window: "0s"}, wantErr: `window "0s"`},
		{name: "aggression", in: &contourv1.SlowStartPolicy{Window: "1s", Aggression: "-1"}, wantErr: `aggression "-1"`},
		{name: "percent", in: &contourv1.SlowStartPolicy{Window: "1s", MinimumWeightPercent: 101}, wantErr: "minWeightPercent 101"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := slowStart(tc.in, tc.lb)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, %v, want %+v", got, err, tc.want)
			}
		})
	}
}

func TestClusterSettingsKey(t *testing.T) {
	idle := time.Minute
	keys := map[string]string{}
	for name, cs := range map[string]core.ClusterSettings{
		"none":      {},
		"lb":        {Lb: "Random"},
		"idle":      {Idle: &idle},
		"slowstart": {SlowStart: &ir.SlowStart{Window: time.Second, Aggression: 1}},
		"both":      {Idle: &idle, SlowStart: &ir.SlowStart{Window: time.Second, Aggression: 1}},
	} {
		k := cs.Key()
		if other, dup := keys[k]; dup {
			t.Errorf("%s and %s have the same key %q", name, other, k)
		}
		keys[k] = name
	}
	if k := (core.ClusterSettings{Lb: "Random"}).Key(); k != "<nil>|Random|<nil>" {
		t.Errorf("the key of a load balancer policy changed: %q (cluster names of existing configurations would change)", k)
	}
}
