package httpproxy

import (
	"testing"

	"github.com/portcullis/portcullis/controlplane/internal/builder/buildertest"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

func TestFQDNValid(t *testing.T) {
	for fqdn, want := range map[string]string{
		"echo.example.com":   "",
		"Echo.Example.COM":   "",
		"":                   status.ReasonFQDNNotSpecified,
		"*.example.com":      "",
		"*.Example.COM":      "",
		"*":                  status.ReasonWildCardNotAllowed,
		"*.*.example.com":    status.ReasonWildCardNotAllowed,
		"a.*.example.com":    status.ReasonWildCardNotAllowed,
		"*a.example.com":     status.ReasonWildCardNotAllowed,
		"*.":                 status.ReasonFQDNInvalid,
		"*.echo_1.com":       status.ReasonFQDNInvalid,
		"echo_1.example.com": status.ReasonFQDNInvalid,
		"echo.example.com.":  status.ReasonFQDNInvalid,
	} {
		st := &status.Object{}
		fqdnValid(fqdn, st)
		if got := buildertest.ReasonOf(st); got != want {
			t.Errorf("fqdnValid(%q): reason %q, want %q", fqdn, got, want)
		}
	}
}

func TestRootNamespaceAllowed(t *testing.T) {
	for _, tc := range []struct {
		namespace string
		allowed   []string
		want      string
	}{
		{"team-a", nil, ""},
		{"team-a", []string{"team-a", "team-b"}, ""},
		{"team-c", []string{"team-a", "team-b"}, status.ReasonRootProxyNotAllowedInNamespace},
	} {
		st := &status.Object{}
		rootNamespaceAllowed(tc.namespace, tc.allowed, st)
		if got := buildertest.ReasonOf(st); got != tc.want {
			t.Errorf("rootNamespaceAllowed(%q, %v): reason %q, want %q", tc.namespace, tc.allowed, got, tc.want)
		}
	}
}
