package extension

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/portcullis/portcullis/controlplane/internal/config"
)

// parseExtension is the extension section of a configuration file.
func parseExtension(t *testing.T, in string) *config.Extension {
	t.Helper()
	c, err := config.Parse([]byte(in), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return c.Extension
}

// The configuration file's section, every field set, is the Registration
// it says.
func TestFromConfig(t *testing.T) {
	got, err := FromConfig(parseExtension(t, `
extension:
  address: 127.0.0.1:9443
  tls: {caFile: ca.crt, certFile: tls.crt, keyFile: tls.key, serverName: extension.vendor.svc}
  hooks: [PostVirtualHostModify, PostHTTPListenerModify, PostTranslateInsert]
  timeout: 500ms
  failurePolicy: Open
  maxMessageSize: 16777216
  phaseBudget: 5s
  maxConcurrency: 4
`))
	if err != nil {
		t.Fatal(err)
	}
	want := Registration{
		Address:        "127.0.0.1:9443",
		TLS:            &TLS{CAFile: "ca.crt", CertFile: "tls.crt", KeyFile: "tls.key", ServerName: "extension.vendor.svc"},
		Hooks:          []Hook{HookPostVirtualHostModify, HookPostHTTPListenerModify, HookPostTranslateInsert},
		Timeout:        500 * time.Millisecond,
		FailurePolicy:  FailOpen,
		MaxMessageSize: 16 << 20,
		PhaseBudget:    5 * time.Second,
		MaxConcurrency: 4,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("registration\n got %+v\nwant %+v", got, want)
	}
	// The least: an address and a hook; the rest are the defaults.
	got, err = FromConfig(parseExtension(t, "extension: {address: ext:9443, hooks: [PostTranslateModify]}"))
	if err != nil || got.TLS != nil || got.Timeout != 0 || got.FailurePolicy != "" {
		t.Errorf("minimal registration = %+v, %v", got, err)
	}
}

// Every problem is reported at once, each naming its field.
func TestFromConfigErrors(t *testing.T) {
	const ok = "address: ext:9443, hooks: [PostTranslateModify]"
	for _, tc := range []struct {
		name, in string
		want     []string
	}{
		{"no address, no hooks", "extension: {timeout: 1s}", []string{"extension.address: required", "; extension.hooks: subscribe to at least one of"}},
		{"unknown and duplicate hooks", "extension: {address: ext:9443, hooks: [PostRouteModify, PostRouteModify, PreRouteModify]}",
			[]string{"extension.hooks: PostRouteModify listed twice", `extension.hooks: unknown hook "PreRouteModify"`}},
		{"bad policy", "extension: {" + ok + ", failurePolicy: closed}", []string{`extension.failurePolicy: "closed" is neither Closed nor Open`}},
		{"negative values", "extension: {" + ok + ", timeout: -1s, maxMessageSize: -1, maxConcurrency: -2}",
			[]string{"extension.timeout: -1s is negative", "extension.maxMessageSize: -1 is negative", "extension.maxConcurrency: -2 is negative"}},
		{"budget shorter than a call", "extension: {" + ok + ", timeout: 2s, phaseBudget: 1s}", []string{"extension.phaseBudget: 1s is shorter than the timeout of one call (2s)"}},
		{"certificate without key", "extension: {" + ok + ", tls: {certFile: c.pem}}", []string{"extension.tls: certFile and keyFile go together"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := FromConfig(parseExtension(t, tc.in))
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("error = %v, want it to contain %q", err, w)
				}
			}
		})
	}
	// A duration that does not parse (config.Parse refuses it too) is
	// one error, not also a comparison of its default with the other.
	_, err := FromConfig(&config.Extension{Address: "ext:9443", Hooks: []string{"PostTranslateModify"}, Timeout: "20s", PhaseBudget: "soon"})
	if err == nil || !strings.Contains(err.Error(), "extension.phaseBudget: must be a duration") || strings.Contains(err.Error(), "shorter than") {
		t.Errorf("error = %v, want only the unparsable phaseBudget", err)
	}
}
