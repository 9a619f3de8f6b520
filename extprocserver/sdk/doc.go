// Package sdk is a small Go SDK for Envoy external processing servers
// (envoy.service.ext_proc.v3.ExternalProcessor/Process).
//
// A Processor has one method per phase of an HTTP exchange (request headers,
// body and trailers; response headers, body and trailers). Embed Continue to
// get "continue unchanged" for the phases you do not handle. Each method gets
// the Exchange, the state of one HTTP request carried across its phases, and
// a view of the message it may change: headers and trailers through Headers,
// bodies through Body. Actions that end or steer the exchange go through the
// Exchange: Respond (an immediate response), ClearRouteCache, SetMetadata
// (dynamic metadata) and OverrideMode (mode_override).
//
// Server is the stream driver. It owns the protocol discipline Envoy
// expects: exactly one ProcessingResponse per ProcessingRequest, in order
// (FULL_DUPLEX_STREAMED bodies are answered with streamed body responses:
// see Body); header mutations computed as a net diff (Envoy applies
// removals before sets) and never invalid; Content-Length kept right when a
// BUFFERED body is replaced; stream
// cancellation passed to processors through the context; errors returned as
// gRPC status codes. Chain runs several processors in order on one stream.
//
// Serve it with ServerOptions (grpc.NewServer(sdk.ServerOptions()...)):
// Codec decodes Envoy's headers messages with a few allocations and sends
// unchanged answers as bytes encoded once.
//
// Envoy only honours mode_override when the filter sets allow_mode_override,
// and only in a response to a headers message; it ignores it silently
// otherwise.
package sdk
