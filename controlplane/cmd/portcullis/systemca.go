package main

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// defaultSystemCAFiles are where the usual distributions keep the
// system's trust roots as one PEM bundle (Debian and Ubuntu, also the
// distroless image of the Dockerfile; Fedora and RHEL; Alpine, macOS and
// the BSDs): --system-ca-file's default is the first that exists.
var defaultSystemCAFiles = []string{
	"/etc/ssl/certs/ca-certificates.crt",
	"/etc/pki/tls/certs/ca-bundle.crt",
	"/etc/ssl/cert.pem",
}

// noSystemCA is the --system-ca-file value that turns the system's trust
// roots off.
const noSystemCA = "none"

// loadSystemCA reads the system's trust roots for the builder
// (builder.Options.SystemCA): the file named, or the first of the
// defaults that exists (nil when none does, or for "none"). The control
// plane reads the bundle and sends it to Envoy inline, as one SDS secret
// (system-ca) all the clusters that verify against it share, rather than
// naming the file in Envoy's configuration: Envoy's image or host need
// not have the same file (a missing file would make Envoy reject the
// whole cluster update), and the bundle is checked here, once. The cost is
// the bundle's size (some 200 KB) sent to each Envoy once, and a restart
// of the control plane to read a new bundle.
func loadSystemCA(path string) ([]byte, error) {
	switch path {
	case noSystemCA:
		return nil, nil
	case "":
		for _, p := range defaultSystemCAFiles {
			b, err := os.ReadFile(filepath.Clean(p)) // a constant path
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", p, err)
			}
			return systemCABundle(b, p)
		}
		return nil, nil
	}
	// The path is the operator's own (a flag), not a request's.
	b, err := os.ReadFile(filepath.Clean(path))
	if err != nil {
		return nil, err
	}
	return systemCABundle(b, path)
}

// systemCABundle is the bundle b (read from path) with only its
// certificates that parse: distributions' bundles may carry other blocks
// or certificates Go refuses, which Envoy need not see. A bundle without
// any is an error, as a CA secret without one is.
func systemCABundle(b []byte, path string) ([]byte, error) {
	var out bytes.Buffer
	for {
		var block *pem.Block
		if block, b = pem.Decode(b); block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			continue
		}
		if err := pem.Encode(&out, &pem.Block{Type: block.Type, Bytes: block.Bytes}); err != nil {
			return nil, err
		}
	}
	if out.Len() == 0 {
		return nil, fmt.Errorf("%s: no PEM certificate", path)
	}
	return out.Bytes(), nil
}
