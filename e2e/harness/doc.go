// Package harness starts the real components of a Portcullis deployment on
// loopback for end-to-end tests: the Kubernetes API server and etcd (envtest),
// our own binaries (`portcullis`, `authserver`, ...), Envoy, and in-process
// echo upstreams (HTTP, and gRPC: [GRPCEcho]). It also makes the certificates, manifests and HTTP clients a
// scenario needs.
//
// Everything binds to 127.0.0.1 on free ports and is stopped by t.Cleanup.
// A missing tool fails the test (run `make tools`); nothing is ever skipped.
//
// Scenarios should talk to a [Stack] — where objects go ([Objects]) and where
// traffic enters (Envoy's HTTP and HTTPS addresses) — rather than to the
// pieces directly, so that the same test can later run against a kind
// cluster by building a different Stack. [StartFileStack] and
// [StartKubernetesStack] build a [LocalStack]: the control plane in either
// provider mode, Envoy, and the [Components] beside them (echo upstream,
// authserver testservers). Request helpers ([EventuallyEcho],
// [EventuallyStatus], [WantHeaders], ...) and loopback Services
// ([LoopbackExternalName], [LoopbackEndpointSlice]) are shared by the
// scenarios, which hold nothing else.
package harness
