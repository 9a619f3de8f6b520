// Package sdk is the Go SDK for Portcullis extension servers: gRPC services
// that Portcullis calls after translation to change the Envoy configuration
// it generated (the ExtensionServer service of extension/api/v1alpha1).
//
// Server implements every hook with the answer of an extension that has
// nothing to do: the input unchanged (PostTranslateInsert: nothing to add).
// An extension overrides only the hooks it needs, in either of two ways:
//
//   - set Server's function fields (RouteModify, VirtualHostModify, ...);
//     a nil field keeps the pass-through answer;
//   - embed Server in a type of its own and define the hook methods it
//     needs (PostRouteModify, ...); the embedded Server answers the others.
//
// The requests carry the extension's own Kubernetes objects as JSON
// (v1alpha1.ExtensionResource); Unstructured and Decode read them.
//
// Serve serves an extension on a listener, with the gRPC health service,
// until its context ends. Package sdktest serves one in-process for tests.
package sdk
