package cluster

import "path/filepath"

// Images the node runs by default (docs/cluster.md lists them).
const (
	// EchoBasicImage is the Gateway API conformance suite's backend.
	EchoBasicImage = "registry.k8s.io/gateway-api/echo-basic"
	// CoreDNSImage is the conformance suite's DNS server for its UDP
	// tests: `cluster dns` stands in for it, answering the Corefile's
	// whoami zones (the suite's query) and refusing the rest.
	CoreDNSImage = "registry.k8s.io/coredns/coredns"
	// EchoServerImage is e2e/cmd/echoserver, for tests of the cluster.
	EchoServerImage = "portcullis.test/echoserver"
)

// DefaultImages is the node's image table: Portcullis's images from the
// tarballs of make image (imagesDir), Envoy from the tools, echo-basic and
// echoserver built into binDir, coredns as `cluster dns`.
func DefaultImages(imagesDir, binDir, toolsBin, self string) []Image {
	envoy := Image{Executables: map[string]string{"envoy": filepath.Join(toolsBin, "envoy")}, Entrypoint: []string{"envoy"}}
	withRepo := func(im Image, repo string) Image { im.Repository = repo; return im }
	return []Image{
		{Repository: "ghcr.io/portcullis/portcullis", Tarball: filepath.Join(imagesDir, "portcullis.tar")},
		{Repository: "ghcr.io/portcullis/basicauth-extension", Tarball: filepath.Join(imagesDir, "basicauth-extension.tar")},
		withRepo(envoy, "envoyproxy/envoy"),
		withRepo(envoy, "docker.io/envoyproxy/envoy"),
		{Repository: EchoBasicImage, Executables: map[string]string{"echo-basic": filepath.Join(binDir, "echo-basic")}, Entrypoint: []string{"echo-basic"}},
		{Repository: EchoServerImage, Executables: map[string]string{"echoserver": filepath.Join(binDir, "echoserver")}, Entrypoint: []string{"echoserver"}},
		{Repository: CoreDNSImage, Executables: map[string]string{"coredns": self}, Entrypoint: []string{"coredns"}, Args: []string{"dns"},
			Note: "a DNS server answering the Corefile's whoami zones, refusing the rest (it never forwards)"},
	}
}
