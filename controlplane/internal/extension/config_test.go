package extension

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/portcullis/portcullis/controlplane/internal/config"
)

// parseConfig is a configuration file.
func parseConfig(t *testing.T, in string) *config.Config {
	t.Helper()
	c, err := config.Parse([]byte(in), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The configuration file's section, every field set, is the Registrations
// it says, in order.
func TestFromConfig(t *testing.T) {
	got, err := FromConfig(parseConfig(t, `
extensions:
- name: vendor
  address: 127.0.0.1:9443
  tls: {caFile: ca.crt, certFile: tls.crt, keyFile: tls.key, serverName: extension.vendor.svc}
  hooks: [PostVirtualHostModify, PostHTTPListenerModify, PostTranslateInsert, PostRouteModify, PostClusterModify]
  timeout: 500ms
  failurePolicy: Open
  maxMessageSize: 16777216
  phaseBudget: 5s
  maxConcurrency: 4
  resources: [{group: example.vendor.io, version: v1, kind: RetryPolicy}]
  backendResources: [{group: example.vendor.io, version: v1, kind: Bucket}]
  policyResources: [{group: example.vendor.io, version: v1alpha1, kind: Quota}]
- name: minimal
  address: ext:9443
  hooks: [PostTranslateModify]
- name: in-cluster
  extensionService: vendor/ext
  hooks: [PostTranslateModify]
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []Registration{{
		Name:             "vendor",
		Where:            "extensions[0]",
		Address:          "127.0.0.1:9443",
		TLS:              &TLS{CAFile: "ca.crt", CertFile: "tls.crt", KeyFile: "tls.key", ServerName: "extension.vendor.svc"},
		Hooks:            []Hook{HookPostVirtualHostModify, HookPostHTTPListenerModify, HookPostTranslateInsert, HookPostRouteModify, HookPostClusterModify},
		Timeout:          500 * time.Millisecond,
		FailurePolicy:    FailOpen,
		MaxMessageSize:   16 << 20,
		PhaseBudget:      5 * time.Second,
		MaxConcurrency:   4,
		Resources:        []schema.GroupVersionKind{{Group: "example.vendor.io", Version: "v1", Kind: "RetryPolicy"}},
		BackendResources: []schema.GroupVersionKind{{Group: "example.vendor.io", Version: "v1", Kind: "Bucket"}},
		PolicyResources:  []schema.GroupVersionKind{{Group: "example.vendor.io", Version: "v1alpha1", Kind: "Quota"}},
	}, {
		// The least: a name, an address and a hook; the rest are the
		// defaults.
		Name: "minimal", Where: "extensions[1]", Address: "ext:9443", Hooks: []Hook{HookPostTranslateModify},
	}, {
		Name: "in-cluster", Where: "extensions[2]", Service: "vendor/ext", Hooks: []Hook{HookPostTranslateModify},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("registrations\n got %+v\nwant %+v", got, want)
	}
	if regs, err := FromConfig(parseConfig(t, "{}")); err != nil || regs != nil {
		t.Errorf("no extensions: %v, %v; want none", regs, err)
	}
}

// Every problem is reported at once, each naming its field.
func TestFromConfigErrors(t *testing.T) {
	const ok = "name: x, address: ext:9443, hooks: [PostTranslateModify]"
	const kind = "{group: example.vendor.io, version: v1, kind: RetryPolicy}"
	for _, tc := range []struct {
		name, in string
		want     []string
	}{
		{"no name, address, hooks", "extensions: [{timeout: 1s}]", []string{"extensions[0].name: required", "; extensions[0].address: required", "; extensions[0].hooks: subscribe to at least one of"}},
		{"unknown and duplicate hooks", "extensions: [{name: x, address: ext:9443, hooks: [PostTranslateModify, PostTranslateModify, PreRouteModify]}]",
			[]string{"extensions[0].hooks: PostTranslateModify listed twice", `extensions[0].hooks: unknown hook "PreRouteModify"`}},
		{"bad policy", "extensions: [{" + ok + ", failurePolicy: closed}]", []string{`extensions[0].failurePolicy: "closed" is neither Closed nor Open`}},
		{"negative values", "extensions: [{" + ok + ", timeout: -1s, maxMessageSize: -1, maxConcurrency: -2}]",
			[]string{"extensions[0].timeout: -1s is negative", "extensions[0].maxMessageSize: -1 is negative", "extensions[0].maxConcurrency: -2 is negative"}},
		{"budget shorter than a call", "extensions: [{" + ok + ", timeout: 2s, phaseBudget: 1s}]", []string{"extensions[0].phaseBudget: 1s is shorter than the timeout of one call (2s)"}},
		{"certificate without key", "extensions: [{" + ok + ", tls: {certFile: c.pem}}]", []string{"extensions[0].tls: certFile and keyFile go together"}},
		{"kinds without the route hook", "extensions: [{" + ok + ", resources: [" + kind + "]}]",
			[]string{"extensions[0].hooks: resources and policyResources are sent only to PostRouteModify: subscribe to it"}},
		{"route hook without kinds", "extensions: [{name: x, address: ext:9443, hooks: [PostRouteModify]}]",
			[]string{"extensions[0].resources: PostRouteModify is called only for routes that reference"}},
		{"cluster hook without backend kinds", "extensions: [{name: x, address: ext:9443, hooks: [PostClusterModify]}]",
			[]string{"extensions[0].backendResources: PostClusterModify is called only for clusters"}},
		{"backend kinds without the cluster hook", "extensions: [{" + ok + ", backendResources: [" + kind + "]}]",
			[]string{"extensions[0].hooks: backendResources are sent only to PostClusterModify"}},
		{"incomplete kind", "extensions: [{name: x, address: a:1, hooks: [PostRouteModify], resources: [{group: g, kind: K}]}]",
			[]string{`extensions[0].resources[0]: group, version and kind are required`}},
		{"a kind of ours", "extensions: [{name: x, address: a:1, hooks: [PostRouteModify], resources: [{group: gateway.networking.k8s.io, version: v1, kind: HTTPRoute}]}]",
			[]string{`extensions[0].resources[0]: HTTPRoute: the group "gateway.networking.k8s.io" is one Portcullis reads itself`}},
		{"a kind listed twice", "extensions: [{name: x, address: a:1, hooks: [PostRouteModify], resources: [" + kind + "], policyResources: [" + kind + "]}]",
			[]string{`extensions[0].policyResources[0]: RetryPolicy.example.vendor.io listed twice`}},
		{"address and extensionService", "extensions: [{" + ok + ", extensionService: vendor/ext}]", []string{"extensions[0]: address and extensionService are exclusive"}},
		{"extensionService without namespace", "extensions: [{name: x, extensionService: ext, hooks: [PostTranslateModify]}]", []string{`extensions[0].extensionService: must be namespace/name, got "ext"`}},
		{"two extensions, one name", "extensions: [{" + ok + "}, {" + ok + "}]", []string{`extensions[1].name: "x" is also the name of extensions[0]`}},
		{"two extensions, one kind", "extensions: [{name: a, address: a:1, hooks: [PostRouteModify], resources: [" + kind + "]}, {name: b, address: b:1, hooks: [PostRouteModify], resources: [" + kind + "]}]",
			[]string{"extensions[1]: RetryPolicy.example.vendor.io is already registered by extensions[0]: a kind has one owner"}},
		{"an unparsable duration is one error", "extensions: [{" + ok + ", timeout: 20s}, {name: second, address: a:1, hooks: [PostTranslateModify], phaseBudget: soon}]",
			[]string{"extensions[1].phaseBudget: must be a duration"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := config.Parse([]byte(tc.in), "c.yaml")
			if err == nil {
				_, err = FromConfig(c)
			}
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("error = %v, want it to contain %q", err, w)
				}
			}
			if err != nil && strings.Contains(err.Error(), "shorter than") && !strings.Contains(tc.name, "shorter") {
				t.Errorf("error = %v: an unparsable duration was also compared", err)
			}
		})
	}
}
