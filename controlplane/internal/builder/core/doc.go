// Package core is what the builder's two front doors (httpproxy,
// gatewayapi) share: the Snapshot of one build's input and the Resolver
// that records every lookup a root makes (resolver.go, same.go); the
// global stage (global.go, extension.go, secret.go: ExtensionServices,
// delegations, the global authorization, processing and rate limit
// service); the rules both APIs need (Services into clusters: backend.go,
// cluster.go; certificates: secret.go, tls.go; authorization and
// processing servers: extauth.go, extproc.go; header and path checks:
// headers.go, paths.go; health checks, circuit breakers); and the merged
// output of a build (output.go, merge.go, origins.go). It knows neither
// front door.
package core
