package serverkit_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/portcullis/portcullis/serverkit"
)

func TestAddFlags(t *testing.T) {
	opts := serverkit.DefaultOptions()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	opts.AddFlags(fs)
	err := fs.Parse([]string{
		"--address=:7000", "--metrics-address=", "--tls-cert-path=c", "--tls-key-path=k",
		"--tls-ca-path=ca", "--shutdown-grace=3s", "--log-level=debug", "--log-format=json",
	})
	if err != nil {
		t.Fatal(err)
	}
	if opts.Address != ":7000" || opts.MetricsAddress != "" || opts.TLSCertPath != "c" || opts.TLSKeyPath != "k" ||
		opts.TLSCAPath != "ca" || opts.ShutdownGrace.String() != "3s" || opts.LogLevel != "debug" || opts.LogFormat != "json" {
		t.Fatalf("parsed options = %+v", opts)
	}
	if err := opts.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
}

func TestDefaultsBindLoopback(t *testing.T) {
	opts := serverkit.DefaultOptions()
	if !strings.HasPrefix(opts.Address, "127.0.0.1:") || !strings.HasPrefix(opts.MetricsAddress, "127.0.0.1:") {
		t.Fatalf("defaults %q, %q should bind loopback", opts.Address, opts.MetricsAddress)
	}
	if err := opts.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestValidate(t *testing.T) {
	for name, mutate := range map[string]func(*serverkit.Options){
		"no address":        func(o *serverkit.Options) { o.Address = "" },
		"cert without key":  func(o *serverkit.Options) { o.TLSCertPath = "c" },
		"key without cert":  func(o *serverkit.Options) { o.TLSKeyPath = "k" },
		"CA without TLS":    func(o *serverkit.Options) { o.TLSCAPath = "ca" },
		"negative grace":    func(o *serverkit.Options) { o.ShutdownGrace = -1 },
		"unknown log level": func(o *serverkit.Options) { o.LogLevel = "loud" },
		"unknown format":    func(o *serverkit.Options) { o.LogFormat = "xml" },
	} {
		opts := serverkit.DefaultOptions()
		mutate(&opts)
		if err := opts.Validate(); err == nil {
			t.Errorf("%s: Validate accepted %+v", name, opts)
		}
	}
}

func TestNewLogger(t *testing.T) {
	opts := serverkit.DefaultOptions()
	opts.LogLevel, opts.LogFormat = "warn", "json"
	var buf bytes.Buffer
	logger, err := opts.NewLogger(&buf)
	if err != nil {
		t.Fatal(err)
	}
	logger.Info("hidden")
	logger.Warn("shown", "k", "v")
	if out := buf.String(); strings.Contains(out, "hidden") || !strings.Contains(out, `"msg":"shown"`) {
		t.Fatalf("log output = %q", out)
	}
}
