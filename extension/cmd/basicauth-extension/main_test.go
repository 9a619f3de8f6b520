package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name    string
		ctx     context.Context
		args    []string
		wantErr string // "" for none
		wantOut []string
	}{
		{name: "help", args: []string{"--help"}, wantErr: flag.ErrHelp.Error(),
			wantOut: []string{"BasicAuthFilter", "--auth-server HOST:PORT", "-auth-server-timeout", "-listen", "127.0.0.1:18100", "hooks: [PostTranslateInsert, PostHTTPListenerModify, PostRouteModify]"}},
		{name: "no auth server", args: nil, wantErr: "--auth-server is required"},
		{name: "bad auth server", args: []string{"--auth-server", "authserver"}, wantErr: "want host:port"},
		{name: "bad timeout", args: []string{"--auth-server", "127.0.0.1:9443", "--auth-server-timeout", "0s"}, wantErr: "not positive"},
		{name: "argument", args: []string{"--auth-server", "127.0.0.1:9443", "serve"}, wantErr: "unexpected arguments"},
		{name: "bad listen", args: []string{"--auth-server", "127.0.0.1:9443", "--listen", "127.0.0.1:99999"}, wantErr: "invalid port"},
		{name: "serves until the context ends", ctx: canceled, args: []string{"--auth-server", "127.0.0.1:9443", "--listen", "127.0.0.1:0"},
			wantOut: []string{"msg=serving", "authServer=127.0.0.1:9443", "msg=stopped"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := tt.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			var out bytes.Buffer
			err := run(ctx, tt.args, &out)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("err = %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
			case tt.name == "help" && !errors.Is(err, flag.ErrHelp):
				t.Fatalf("err = %v, want flag.ErrHelp", err)
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output does not contain %q:\n%s", w, out.String())
				}
			}
		})
	}
}
