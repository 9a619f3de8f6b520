// Command ratelimit is Envoy's global rate limit service
// (github.com/envoyproxy/ratelimit), built from its Go module so that the
// tests can run the real one without downloading binaries. It is
// configured as upstream: environment variables (REDIS_URL, RUNTIME_ROOT,
// ...) and YAML files of descriptors.
package main

import (
	"github.com/envoyproxy/ratelimit/src/service_cmd/runner"
	"github.com/envoyproxy/ratelimit/src/settings"
)

func main() {
	r := runner.NewRunner(settings.NewSettings())
	r.Run()
}
