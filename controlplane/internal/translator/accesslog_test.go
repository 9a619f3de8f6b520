package translator

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// The text format prints the JSON format's fields, in the same order, and
// docs/tracing.md documents both as they are.
func TestAccessLogFormatIsDocumented(t *testing.T) {
	var want []string
	for _, f := range accessLogFields {
		want = append(want, f.command)
	}
	got := regexp.MustCompile(`%[A-Z_]+(\([^)]*\))?%`).FindAllString(AccessLogTextFormat, -1)
	if !slices.Equal(got, want) {
		t.Errorf("the text format's commands\n%q\ndiffer from the JSON fields'\n%q", got, want)
	}
	doc, err := os.ReadFile("../../../docs/tracing.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), strings.TrimSuffix(AccessLogTextFormat, "\n")) {
		t.Errorf("docs/tracing.md does not show the text format as it is:\n%s", AccessLogTextFormat)
	}
	for _, f := range accessLogFields {
		if !strings.Contains(string(doc), "| `"+f.name+"` |") {
			t.Errorf("docs/tracing.md does not list the field %s", f.name)
		}
	}
}

// Every HCM has the access log, and a change of its format alone
// translates the TLS hosts again (the cache compares hosts, which do not
// hold it).
func TestEveryHCMLogs(t *testing.T) {
	model := func(a *ir.AccessLog) *ir.Model {
		m := sharedModel(
			[]*ir.VirtualHost{{FQDN: "plain.example.com", Routes: []*ir.Route{{Path: "/"}}}},
			[]*ir.SecureVirtualHost{{VirtualHost: ir.VirtualHost{FQDN: "secure.example.com", Routes: []*ir.Route{{Path: "/"}}}, Secret: "default/tls"}})
		m.AccessLog = a
		return m
	}
	for name, hcm := range hcmsOf(t, Translate(model(&ir.AccessLog{}), Options{})) {
		if len(hcm.AccessLog) != 1 || !strings.Contains(hcm.AccessLog[0].GetTypedConfig().String(), "ext_authz:decision") {
			t.Errorf("%s: access log %v, want the documented one", name, hcm.AccessLog)
		}
	}
	c := NewCache()
	for i, a := range []*ir.AccessLog{nil, nil, {}, {}, {JSON: true}, nil} {
		checkUncached(t, TranslateCached(model(a), Options{}, c), Translate(model(a), Options{}))
		if want := map[bool]int{true: 1, false: 0}[i == 1 || i == 3]; c.Hits != want {
			t.Errorf("step %d (%+v): %d hosts reused, want %d", i, a, c.Hits, want)
		}
	}
}
