package builder

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/builder/core"
	"github.com/portcullis/portcullis/controlplane/internal/builder/httpproxy"
	"github.com/portcullis/portcullis/controlplane/internal/config"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/objects"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

func proxy(name string, fqdn string, routes int, includes ...contourv1.Include) *contourv1.HTTPProxy {
	p := &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
	if fqdn != "" {
		p.Spec.VirtualHost = &contourv1.VirtualHost{Fqdn: fqdn}
	}
	for i := range routes {
		p.Spec.Routes = append(p.Spec.Routes, contourv1.Route{
			Conditions: []contourv1.MatchCondition{{Prefix: fmt.Sprintf("/r%d", i)}},
			Services:   []contourv1.Service{{Name: "echo", Port: 80}},
		})
	}
	p.Spec.Includes = includes
	return p
}

func inc(name, prefix string) contourv1.Include {
	i := contourv1.Include{Name: name}
	if prefix != "" {
		i.Conditions = []contourv1.MatchCondition{{Prefix: prefix}}
	}
	return i
}

// diamond is a root including p0, and p0..p(depth-1) each including the
// next twice, under prefixes a and b; p(depth) has one route. It expands
// to 2^depth routes.
func diamond(depth int, a, b string) []*contourv1.HTTPProxy {
	out := []*contourv1.HTTPProxy{proxy("root", "diamond.example.com", 0, inc("p0", ""))}
	for i := range depth {
		next := fmt.Sprintf("p%d", i+1)
		out = append(out, proxy(fmt.Sprintf("p%d", i), "", 0, inc(next, a), inc(next, b)))
	}
	return append(out, proxy(fmt.Sprintf("p%d", depth), "", 1))
}

func buildSet(proxies []*contourv1.HTTPProxy, limits config.Limits) *Result {
	set := &objects.Set{
		HTTPProxies: proxies,
		Services: []*corev1.Service{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "echo"},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}},
		EndpointSlices: []*discoveryv1.EndpointSlice{{
			ObjectMeta:  metav1.ObjectMeta{Namespace: "default", Name: "echo-1", Labels: map[string]string{discoveryv1.LabelServiceName: "echo"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Port: core.PtrTo(int32(80))}},
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}}},
		}},
	}
	set.Sort()
	return Build(set, core.Options{Limits: limits})
}

// TestIncludeLimits: a root whose includes expand past a limit is not
// served, with an IncludeLimitExceeded error on it and on the HTTPProxies
// of the include path where the limit was crossed; the other roots are
// served as usual.
func TestIncludeLimits(t *testing.T) {
	// Another root including the diamond deep enough to stay within the
	// limits.
	bystander := proxy("bystander", "bystander.example.com", 1, inc("p10", "/shared"))
	for _, tc := range []struct {
		name    string
		proxies []*contourv1.HTTPProxy
		limits  config.Limits
		// wantRoutes of diamond.example.com; -1: not served.
		wantRoutes int
		// wantErrors: the HTTPProxies with the limit's error, and a
		// part of its message.
		wantErrors []string
		wantMsg    string
	}{
		{
			name:       "a diamond within the limits is served",
			proxies:    diamond(5, "/a", "/b"),
			wantRoutes: 32,
		},
		{
			name:       "depth-20 diamond: past the include depth",
			proxies:    append(diamond(20, "/a", "/b"), bystander),
			wantRoutes: -1,
			wantErrors: []string{"root", "p0", "p1", "p15", "p16"},
			wantMsg:    "more than 16 HTTPProxies deep (limits.maxIncludeDepth) at default/root -> default/p0 -> ",
		},
		{
			name:       "past the routes of a virtual host",
			proxies:    diamond(8, "/a", "/b"),
			limits:     config.Limits{MaxRoutesPerVirtualHost: 100},
			wantRoutes: -1,
			wantErrors: []string{"root", "p0", "p8"},
			wantMsg:    "more than 100 routes (limits.maxRoutesPerVirtualHost",
		},
		{
			name:       "past the includes of a root",
			proxies:    diamond(8, "/a", "/b"),
			limits:     config.Limits{MaxIncludesPerRoot: 50},
			wantRoutes: -1,
			wantErrors: []string{"root", "p0"},
			wantMsg:    "more than 50 includes (limits.maxIncludesPerRoot",
		},
		{
			name:       "a root's own routes count",
			proxies:    []*contourv1.HTTPProxy{proxy("root", "diamond.example.com", 11)},
			limits:     config.Limits{MaxRoutesPerVirtualHost: 10},
			wantRoutes: -1,
			wantErrors: []string{"root"},
			wantMsg:    "this root expands to more than 10 routes",
		},
		{
			// Included again under the same match ("" and "/" add
			// nothing), an HTTPProxy is built once: 13 builds instead
			// of 16,383, within maxIncludesPerRoot. Its 8192 routes
			// have one match: the virtual host keeps the last, as
			// Contour's.
			name:       "a diamond of identical matches is built once per level",
			proxies:    diamond(13, "", "/"),
			wantRoutes: 1,
		},
		{
			name:       "... and its routes still count",
			proxies:    diamond(13, "", "/"),
			limits:     config.Limits{MaxRoutesPerVirtualHost: 8191},
			wantRoutes: -1,
			wantErrors: []string{"root", "p0"},
			wantMsg:    "more than 8191 routes",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := buildSet(tc.proxies, tc.limits)
			routes := -1
			for _, vh := range res.Model.Listener(ir.HTTPListenerName).Insecure {
				if vh.FQDN == "diamond.example.com" {
					routes = len(vh.Routes)
				}
			}
			if routes != tc.wantRoutes {
				t.Errorf("diamond.example.com has %d routes, want %d", routes, tc.wantRoutes)
			}
			byName := map[string]*status.Object{}
			for _, o := range res.Status {
				byName[o.Ref.Name] = o
			}
			for _, name := range tc.wantErrors {
				o := byName[name]
				if o == nil || !hasLimitError(o, tc.wantMsg) {
					t.Errorf("%s: want an %s error containing %q, got %v", name, status.ReasonIncludeLimitExceeded, tc.wantMsg, o)
				}
			}
			for _, o := range res.Status {
				// An HTTPProxy only the root that is not served
				// includes is not served either: orphaned, naming the
				// root, unless its own error says why.
				switch {
				case o.Orphaned && (tc.wantRoutes != -1 || !strings.Contains(o.OrphanedMessage, "included only by root HTTPProxies that are invalid (default/root)")):
					t.Errorf("%s is orphaned (%q) under a root that is served", o.Ref, o.OrphanedMessage)
				case tc.wantRoutes == -1 && o.Ref.Name != "root" && o.Ref.Name != "bystander" && o.Valid() && !servedByBystander(tc.proxies, o.Ref.Name):
					t.Errorf("%s is valid but only an invalid root includes it", o.Ref)
				}
				if o.Ref.Name == "bystander" && !o.Valid() {
					t.Errorf("another root is affected: %s", status.Summary(o))
				}
			}
			if tc.wantErrors == nil && len(res.Status) > 0 {
				for _, o := range res.Status {
					if !o.Valid() {
						t.Errorf("%s: %s", o.Ref, status.Summary(o))
					}
				}
			}
		})
	}
}

func hasLimitError(o *status.Object, msg string) bool {
	for _, p := range o.Errors {
		if p.Reason == status.ReasonIncludeLimitExceeded && p.Type == contourv1.ConditionTypeIncludeError && strings.Contains(p.Message, msg) {
			return true
		}
	}
	return false
}

// TestReusedWalksEqualWalksBuiltAgain: an HTTPProxy included again under
// the same match is not built again; the build must be exactly what
// building it again gives, including when an HTTPProxy is found invalid in
// between (under another match) and with include cycles.
func TestReusedWalksEqualWalksBuiltAgain(t *testing.T) {
	exact := func(name, path string) contourv1.Include {
		return contourv1.Include{Name: name, Conditions: []contourv1.MatchCondition{{Exact: path}}}
	}
	leaf := proxy("leaf", "", 0)
	leaf.Spec.Routes = []contourv1.Route{{Conditions: []contourv1.MatchCondition{{Exact: "/z"}}, Services: []contourv1.Service{{Name: "echo", Port: 80}}}}
	for name, proxies := range map[string][]*contourv1.HTTPProxy{
		"identical matches": diamond(6, "", "/"),
		"different matches": diamond(6, "/a", "/b"),
		// c is built under exact /k from the root; x, included by c,
		// cannot include c back (exact under exact). Included again
		// under exact /k through x, c's walk would find x on the
		// include path: a cycle its first walk did not see.
		"a cycle only one include path sees": {
			proxy("root", "diamond.example.com", 0, exact("c", "/k"), inc("x", "")),
			proxy("c", "", 1, inc("x", "")), proxy("x", "", 1, exact("c", "/k")),
		},
		// leaf is built under "/" through a and m (valid), then found
		// invalid under an exact match (exact under exact), then m is
		// included again under "/" through b.
		"found invalid in between": {
			proxy("root", "diamond.example.com", 0, inc("a", "/"), exact("c", "/e"), inc("b", "")),
			proxy("a", "", 0, inc("m", "")), proxy("b", "", 0, inc("m", "/")), proxy("c", "", 0, inc("leaf", "")),
			proxy("m", "", 1, inc("leaf", "")), leaf,
		},
	} {
		t.Run(name, func(t *testing.T) {
			reused := buildSet(proxies, config.Limits{})
			httpproxy.ReuseWalks = false
			defer func() { httpproxy.ReuseWalks = true }()
			again := buildSet(proxies, config.Limits{})
			if !reflect.DeepEqual(reused.Model, again.Model) {
				t.Errorf("models differ")
			}
			if !reflect.DeepEqual(reused.Status, again.Status) {
				for i := range min(len(reused.Status), len(again.Status)) {
					t.Logf("%s\n  reused: %s\n  again:  %s", reused.Status[i].Ref, status.Summary(reused.Status[i]), status.Summary(again.Status[i]))
				}
				t.Errorf("statuses differ")
			}
		})
	}
}

// servedByBystander: the bystander root of TestIncludeLimits includes p10,
// which includes the rest of the diamond.
func servedByBystander(proxies []*contourv1.HTTPProxy, name string) bool {
	n, err := strconv.Atoi(strings.TrimPrefix(name, "p"))
	return err == nil && n >= 10 && slices.ContainsFunc(proxies, func(p *contourv1.HTTPProxy) bool { return p.Name == "bystander" })
}

// TestChildOfAnInvalidRoot: an HTTPProxy included only by a root that is
// not served is not served either, and its status says so (orphaned,
// naming the root); included by a served root too, it is valid.
func TestChildOfAnInvalidRoot(t *testing.T) {
	invalid := proxy("invalid", "a.*.example.com", 1, inc("child", "/child")) // a wildcard not the first label: refused
	for _, tc := range []struct {
		name    string
		proxies []*contourv1.HTTPProxy
		wantMsg string // "" for valid
	}{
		{"only an invalid root", []*contourv1.HTTPProxy{invalid, proxy("child", "", 1)},
			"this HTTPProxy is included only by root HTTPProxies that are invalid (default/invalid): its routes are not served"},
		{"an invalid and a served root", []*contourv1.HTTPProxy{invalid, proxy("served", "served.example.com", 0, inc("child", "/c")), proxy("child", "", 1)}, ""},
		{"no root", []*contourv1.HTTPProxy{proxy("child", "", 1)}, status.MessageOrphaned},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := buildSet(tc.proxies, config.Limits{})
			for _, o := range res.Status {
				if o.Ref.Name != "child" {
					continue
				}
				c := status.ValidCondition(o, status.MessageValid, nil, metav1.Now())
				switch {
				case tc.wantMsg == "" && !o.Valid():
					t.Errorf("child: %s, want valid", status.Summary(o))
				case tc.wantMsg != "" && (!o.Orphaned || c.Message != tc.wantMsg):
					t.Errorf("child: orphaned %v, message %q, want orphaned with %q", o.Orphaned, c.Message, tc.wantMsg)
				}
				return
			}
			t.Fatal("no status for child")
		})
	}
}
