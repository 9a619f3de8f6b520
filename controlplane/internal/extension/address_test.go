package extension

import (
	"context"
	"net"
	"path/filepath"
	"testing"

	"github.com/portcullis/portcullis/extension/sdk"
)

// The addresses Envoy Gateway's service settings name (fqdn, ip, unix)
// are all an address: host:port, [v6]:port and unix:///path reach the
// extension.
func TestAddressForms(t *testing.T) {
	res := globalAuth(t)
	for _, tc := range []struct{ name, network, listen string }{
		{"ip", "tcp", "127.0.0.1:0"},
		{"ipv6", "tcp", "[::1]:0"},
		{"fqdn", "tcp", "localhost:0"},
		{"unix", "unix", filepath.Join(t.TempDir(), "ext.sock")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lis, err := net.Listen(tc.network, tc.listen)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- sdk.Serve(ctx, lis, &sdk.Server{}) }()
			t.Cleanup(func() {
				cancel()
				if err := <-done; err != nil {
					t.Error(err)
				}
			})
			addr := lis.Addr().String()
			switch tc.name {
			case "unix":
				addr = "unix://" + tc.listen
			case "fqdn":
				_, port, _ := net.SplitHostPort(addr)
				addr = net.JoinHostPort("localhost", port)
			}
			r := newRunner(t, Registration{Address: addr, Hooks: []Hook{HookPostTranslateModify}})
			if out, failures := r.Apply(t.Context(), res, Refs{}); out == nil || len(failures) > 0 {
				t.Errorf("%s: failures %v", addr, failures)
			}
		})
	}
}
