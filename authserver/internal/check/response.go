// Package check builds ext_authz v3 Check responses and wraps backends with
// what every backend needs: failing closed, metrics and safe logging.
package check

import (
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"

	"github.com/portcullis/portcullis/serverkit/httpheader"
)

// Header is a header a backend sets on the request sent upstream.
type Header struct {
	Name  string
	Value string
}

// Allow builds an OK response that sets headers on the upstream request.
//
// Client-supplied copies of those headers are removed first: every request
// header whose name matches one of ours ignoring case and treating '_' and
// '-' alike (Auth_Handler, AUTH-HANDLER, ...), as listed in the request
// Envoy sent. An exact (case-insensitive) match is not listed for removal
// but overwritten, because Envoy applies removals after additions and would
// otherwise drop our own header.
//
// It returns an error for a header that cannot be sent safely (bad name,
// CR/LF or other control characters in the value); callers fail closed.
func Allow(req *authv3.CheckRequest, headers []Header) (*authv3.CheckResponse, error) {
	return allow(req, headers, nil, "")
}

// AllowRemoving is Allow that also removes every client-supplied copy
// (any case, '_' or '-') of the headers named in remove: headers the
// backend owns but does not set on this request, such as a claim header
// without a claim.
func AllowRemoving(req *authv3.CheckRequest, headers []Header, remove []string) (*authv3.CheckResponse, error) {
	return allow(req, headers, remove, "")
}

// AllowWithContext is Allow for a backend that forwards the route's
// context as Auth-Context-* headers: it also removes every client-supplied
// Auth-Context-* header it does not set, because upstreams trust that
// prefix as the route's context, also for keys this route does not have.
func AllowWithContext(req *authv3.CheckRequest, headers []Header) (*authv3.CheckResponse, error) {
	return allow(req, headers, nil, fold(ContextHeaderPrefix))
}

// allow removes, besides the variants of headers, the variants of remove
// and every request header whose folded name starts with reserved (""
// reserves nothing).
func allow(req *authv3.CheckRequest, headers []Header, remove []string, reserved string) (*authv3.CheckResponse, error) {
	ours := make(map[string]bool, len(headers))     // lower-cased names we set
	variants := make(map[string]bool, len(headers)) // their '_'/'-'-folded forms
	ok := &authv3.OkHttpResponse{}
	for _, h := range headers {
		if err := validHeader(h); err != nil {
			return nil, err
		}
		ours[strings.ToLower(h.Name)] = true
		variants[fold(h.Name)] = true
		ok.Headers = append(ok.Headers, overwrite(h))
	}
	for _, name := range remove {
		variants[fold(name)] = true
	}
	for _, name := range requestHeaderNames(req) {
		f := fold(name)
		if (variants[f] || (reserved != "" && strings.HasPrefix(f, reserved))) && !ours[strings.ToLower(name)] {
			ok.HeadersToRemove = append(ok.HeadersToRemove, name)
		}
	}
	return &authv3.CheckResponse{
		Status:       &rpcstatus.Status{Code: int32(codes.OK)},
		HttpResponse: &authv3.CheckResponse_OkResponse{OkResponse: ok},
	}, nil
}

// Deny builds a denial that Envoy sends to the client as an HTTP response
// with the given status and a short plain-text body. The status must be a
// 4xx or 5xx code Envoy knows.
func Deny(status int, body string) (*authv3.CheckResponse, error) {
	return DenyWithHeaders(status, body)
}

// DenyWithHeaders is Deny with extra response headers for the client (a
// challenge, a Retry-After, ...). The headers are validated like Allow's.
func DenyWithHeaders(status int, body string, headers ...Header) (*authv3.CheckResponse, error) {
	if status < 400 || status > 599 {
		return nil, fmt.Errorf("deny status %d is not 4xx or 5xx", status)
	}
	code := codes.PermissionDenied
	if status == http.StatusUnauthorized {
		code = codes.Unauthenticated
	}
	return denied(status, code, body, append([]Header{{"Content-Type", "text/plain; charset=utf-8"}}, headers...)...)
}

// Unauthorized is a 401 denial carrying challenge as WWW-Authenticate
// (`Basic realm="x"`, `Bearer error="invalid_token"`, ...) and
// Cache-Control: no-store, so that no cache keeps the answer.
func Unauthorized(challenge string) (*authv3.CheckResponse, error) {
	return DenyWithHeaders(http.StatusUnauthorized, "401 Unauthorized\n",
		Header{"WWW-Authenticate", challenge}, Header{"Cache-Control", "no-store"})
}

// Redirect builds a 302 Found denial pointing the client at location (a
// sign-in page, typically). Callers decide which locations are acceptable;
// here it is only checked to be a safe header value.
func Redirect(location string) (*authv3.CheckResponse, error) {
	if location == "" {
		return nil, fmt.Errorf("empty redirect location")
	}
	return denied(http.StatusFound, codes.Unauthenticated, "",
		Header{"Location", location}, Header{"Cache-Control", "no-store"})
}

// Respond answers the client directly with status, body and headers, any
// status Envoy knows (200 included): a small page the backend serves
// itself, such as a form. The request does not reach the upstream; it is
// a denial as far as Envoy and the checks_total metric are concerned.
// The headers are validated like Allow's.
func Respond(status int, body string, headers ...Header) (*authv3.CheckResponse, error) {
	return denied(status, codes.PermissionDenied, body, headers...)
}

// InternalError is the fail-closed answer when a backend cannot decide.
func InternalError() *authv3.CheckResponse {
	resp, _ := Deny(http.StatusInternalServerError, "500 Internal Server Error: authorization failed\n")
	return resp
}

func denied(status int, code codes.Code, body string, headers ...Header) (*authv3.CheckResponse, error) {
	// Envoy rejects status codes outside its enum, which would turn the
	// answer into an error (and, with failOpen, into an allow).
	code32, known := envoyStatus(status)
	if !known {
		return nil, fmt.Errorf("HTTP status %d is unknown to Envoy", status)
	}
	d := &authv3.DeniedHttpResponse{
		Status: &typev3.HttpStatus{Code: code32},
		Body:   body,
	}
	for _, h := range headers {
		if err := validHeader(h); err != nil {
			return nil, err
		}
		d.Headers = append(d.Headers, overwrite(h))
	}
	return &authv3.CheckResponse{
		Status:       grpcstatus.New(code, "").Proto(), // the code as int32, as gRPC converts it
		HttpResponse: &authv3.CheckResponse_DeniedResponse{DeniedResponse: d},
	}, nil
}

// envoyStatus is status as Envoy's enum, and whether Envoy knows it. A
// status outside int32 is not: converting it would wrap around to
// another, maybe known, status.
func envoyStatus(status int) (typev3.StatusCode, bool) {
	if status < math.MinInt32 || status > math.MaxInt32 {
		return 0, false
	}
	code := int32(status)
	_, known := typev3.StatusCode_name[code]
	return typev3.StatusCode(code), known
}

func overwrite(h Header) *corev3.HeaderValueOption {
	return &corev3.HeaderValueOption{
		Header: &corev3.HeaderValue{Key: h.Name, Value: h.Value},
		// The enum's zero value appends, which would keep a client's copy.
		AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD,
	}
}

// requestHeaderNames lists the header names of the request as Envoy sent
// them, from the map and, when Envoy encodes raw headers, the header map:
// sorted, each once.
func requestHeaderNames(req *authv3.CheckRequest) []string {
	h := req.GetAttributes().GetRequest().GetHttp()
	var names []string
	for name := range h.GetHeaders() {
		names = append(names, name)
	}
	for _, hv := range h.GetHeaderMap().GetHeaders() {
		names = append(names, hv.GetKey())
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// fold maps header names that some upstreams treat as the same header
// (CGI-style frameworks turn '-' into '_') to one form.
func fold(name string) string {
	return strings.ReplaceAll(strings.ToLower(name), "_", "-")
}

func validHeader(h Header) error {
	if !ValidHeaderName(h.Name) {
		return fmt.Errorf("invalid header name %q", h.Name)
	}
	if !ValidHeaderValue(h.Value) {
		return fmt.Errorf("invalid value for header %s", h.Name)
	}
	return nil
}

// ValidHeaderName reports whether name is a non-empty RFC 9110 token
// (serverkit/httpheader: the processing server applies the same rule).
func ValidHeaderName(name string) bool { return httpheader.ValidName(name) }

// ValidHeaderValue reports whether v is safe as a header value: no control
// characters except horizontal tab (so no CR, LF or NUL, which would split
// or truncate headers) and within Envoy's size limit.
func ValidHeaderValue(v string) bool { return httpheader.CheckValue(v) == nil }
