// Command basicauth-extension is the sample Portcullis extension server:
// HTTP Basic authentication, by a Portcullis `authserver htpasswd`, on the
// routes that reference a BasicAuthFilter. See
// extension/sample/basicauth/README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/portcullis/portcullis/extension/sample/basicauth"
	"github.com/portcullis/portcullis/extension/sdk"
)

const usage = `basicauth-extension: the sample Portcullis extension server.

It adds HTTP Basic authentication to the HTTPRoute rules that reference a
BasicAuthFilter (examples.portcullis.dev/v1alpha1) with an ExtensionRef
filter. Envoy asks a Portcullis "authserver htpasswd" (--auth-server) about
every request on those routes, through an ext_authz filter this extension
adds to every HTTP listener.

Portcullis calls it as an extension registered in its configuration file:

  extensions:
  - name: basicauth
    address: 127.0.0.1:18100
    hooks: [PostTranslateInsert, PostHTTPListenerModify, PostRouteModify]
    resources:
    - {group: examples.portcullis.dev, version: v1alpha1, kind: BasicAuthFilter}
    failurePolicy: Closed
    timeout: 1s

Usage:
  basicauth-extension --auth-server HOST:PORT [flags]

Example (the auth server on 127.0.0.1:19445):
  authserver htpasswd --secrets off --htpasswd-file users.htpasswd --address 127.0.0.1:19445
  basicauth-extension --listen 127.0.0.1:18100 --auth-server 127.0.0.1:19445

Flags (one dash or two):
`

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "basicauth-extension:", err)
		os.Exit(1)
	}
}

// run parses args and serves until SIGINT or SIGTERM.
func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("basicauth-extension", flag.ContinueOnError)
	fs.SetOutput(out)
	listen := fs.String("listen", "127.0.0.1:18100",
		"gRPC address this extension server listens on (plaintext); Portcullis's registration `address`")
	authServer := fs.String("auth-server", "",
		"`host:port` of the authserver htpasswd gRPC server, as Envoy reaches it (required). An IP address gives a STATIC cluster, a host name a STRICT_DNS one")
	timeout := fs.Duration("auth-server-timeout", basicauth.DefaultTimeout,
		"Envoy's deadline for one check by the auth server; a later answer denies the request (403). Leave room for a first bcrypt")
	showVersion := fs.Bool("version", false, "print the version and exit")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *showVersion {
		fmt.Fprintln(out, "basicauth-extension", buildVersion())
		return nil
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q (see --help)", fs.Args())
	}
	if *authServer == "" {
		return errors.New("--auth-server is required (see --help)")
	}
	ext, err := basicauth.New(basicauth.Config{AuthServer: *authServer, Timeout: *timeout})
	if err != nil {
		return err
	}
	lis, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	log := slog.New(slog.NewTextHandler(out, nil))
	log.Info("serving", "address", lis.Addr().String(), "authServer", *authServer, "authServerTimeout", timeout.String(),
		"filter", basicauth.FilterName, "cluster", basicauth.ClusterName)
	start := time.Now()
	if err := sdk.Serve(ctx, lis, ext); err != nil {
		return err
	}
	log.Info("stopped", "after", time.Since(start).Round(time.Second).String())
	return nil
}

// version is the release (make build and make image set it with -ldflags
// "-X main.version=..."); without it, the module version and VCS revision
// Go recorded.
var version string

func buildVersion() string {
	v, rev := version, ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v == "" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				rev = " (" + s.Value[:12] + ")"
			}
		}
	}
	if v == "" {
		v = "(devel)"
	}
	return v + rev
}
