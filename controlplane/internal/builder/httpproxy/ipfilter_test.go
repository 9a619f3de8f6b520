package httpproxy

import (
	"errors"
	"strings"
	"testing"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
	"github.com/portcullis/portcullis/controlplane/internal/builder/buildertest"
	"github.com/portcullis/portcullis/controlplane/internal/ir"
	"github.com/portcullis/portcullis/controlplane/internal/status"
)

func TestIPFilter(t *testing.T) {
	peer := func(cidr string) contourv1.IPFilterPolicy {
		return contourv1.IPFilterPolicy{Source: contourv1.IPFilterSourcePeer, CIDR: cidr}
	}
	remote := func(cidr string) contourv1.IPFilterPolicy {
		return contourv1.IPFilterPolicy{Source: contourv1.IPFilterSourceRemote, CIDR: cidr}
	}
	for _, tc := range []struct {
		name        string
		allow, deny []contourv1.IPFilterPolicy
		want        *ir.IPFilter
		wantReason  string // the last error's; a bad CIDR has InvalidCIDR before
		wantErr     string
	}{
		{name: "none"},
		{name: "allow, blocks made canonical", allow: []contourv1.IPFilterPolicy{peer("10.1.2.3/8"), remote("192.168.0.7"), peer("2001:DB8::1/32"), peer("::1"), peer("::ffff:127.0.0.2")},
			want: &ir.IPFilter{Allow: true, Rules: []ir.IPRule{{CIDR: "10.0.0.0/8"}, {CIDR: "192.168.0.7/32", Remote: true}, {CIDR: "2001:db8::/32"}, {CIDR: "::1/128"}, {CIDR: "127.0.0.2/32"}}}},
		{name: "deny", deny: []contourv1.IPFilterPolicy{remote("0.0.0.0/0")}, want: &ir.IPFilter{Rules: []ir.IPRule{{CIDR: "0.0.0.0/0", Remote: true}}}},
		{name: "both", allow: []contourv1.IPFilterPolicy{peer("10.0.0.0/8")}, deny: []contourv1.IPFilterPolicy{peer("10.0.0.1")},
			wantReason: status.ReasonIncompatibleIPAddressFilters, wantErr: "cannot both be set"},
		{name: "bad cidr", deny: []contourv1.IPFilterPolicy{peer("10.0.0.0/8"), peer("10.0.0/8")},
			wantReason: status.ReasonIPFilterPolicyNotValid, wantErr: `ipDenyPolicy[1]: cidr "10.0.0/8" is not`},
		{name: "mask too long", allow: []contourv1.IPFilterPolicy{peer("10.0.0.0/33")}, wantReason: status.ReasonIPFilterPolicyNotValid, wantErr: "ipAllowPolicy[0]: cidr"},
		{name: "zone", allow: []contourv1.IPFilterPolicy{peer("fe80::1%eth0")}, wantReason: status.ReasonIPFilterPolicyNotValid, wantErr: "is not an address block"},
		{name: "empty cidr", allow: []contourv1.IPFilterPolicy{peer("")}, wantReason: status.ReasonIPFilterPolicyNotValid, wantErr: `cidr ""`},
		{name: "source", allow: []contourv1.IPFilterPolicy{{Source: "Proxy", CIDR: "10.0.0.0/8"}}, wantReason: status.ReasonIPFilterPolicyNotValid, wantErr: `source "Proxy" is not Peer or Remote`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, errs := ipFilter(tc.allow, tc.deny)
			var reason string
			var err error
			if len(errs) > 0 {
				last := errs[len(errs)-1]
				reason, err = last.reason, errors.New(last.msg)
				for _, e := range errs[:len(errs)-1] {
					if e.reason != status.ReasonInvalidCIDR || !strings.Contains(tc.wantErr, "cidr") && !strings.Contains(tc.wantErr, "address block") {
						t.Errorf("unexpected error %s: %s", e.reason, e.msg)
					}
				}
				if strings.Contains(last.msg, "cidr ") && len(errs) != 2 {
					t.Errorf("a bad cidr: %d errors, want InvalidCIDR and IPFilterPolicyNotValid", len(errs))
				}
			}
			if reason != tc.wantReason {
				t.Errorf("reason %q, want %q", reason, tc.wantReason)
			}
			buildertest.CheckResult(t, got, err, tc.want, tc.wantErr)
		})
	}
}
