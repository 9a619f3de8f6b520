// Package testserver is the authserver backend for tests and demos: it
// allows every request and tells the upstream what it was told.
//
// On allow it sets Auth-Handler: testserver and one Auth-Context-<Key>
// header per context extension (the HTTPProxy authPolicy.context entries),
// after removing client-supplied copies of those headers.
//
// Operators (never clients) can ask for other answers through context keys
// in the testserver.portcullis.dev/ namespace, set on a route's or virtual
// host's authPolicy.context:
//
//	testserver.portcullis.dev/deny: "403"                       deny with that 4xx/5xx status
//	testserver.portcullis.dev/redirect: "https://login.example/" 302 to that URL
//
// deny wins over redirect. A bad value or an unknown key in the namespace
// is a misconfiguration and fails closed with a 500 denial.
package testserver

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"

	"github.com/portcullis/portcullis/authserver/internal/check"
)

// Name is the backend name: the subcommand, the metrics label and the
// Auth-Handler value.
const Name = "testserver"

// Context keys understood by the testserver.
const (
	KeyPrefix   = "testserver.portcullis.dev/"
	DenyKey     = KeyPrefix + "deny"
	RedirectKey = KeyPrefix + "redirect"
)

// HandlerHeader is set on allow; check.ContextHeaders adds one
// Auth-Context-<Key> header per context extension.
const HandlerHeader = "Auth-Handler"

// Server implements envoy.service.auth.v3.Authorization.
type Server struct {
	logger *slog.Logger
}

// New returns a testserver backend; logger reports misconfigurations.
func New(logger *slog.Logger) *Server {
	return &Server{logger: logger}
}

// Check answers from the operator-set context extensions only; it never
// looks at client-controlled parts of the request except to strip copies
// of the headers it sets.
func (s *Server) Check(ctx context.Context, req *authv3.CheckRequest) (*authv3.CheckResponse, error) {
	ext := req.GetAttributes().GetContextExtensions()
	resp, err := s.decide(req, ext)
	if err != nil {
		// Misconfiguration: say which key, never which value.
		s.logger.Warn("testserver misconfigured; denying", "error", err)
		check.SetReason(ctx, check.ReasonRouteContext)
		return check.InternalError(), nil
	}
	return resp, nil
}

func (s *Server) decide(req *authv3.CheckRequest, ext map[string]string) (*authv3.CheckResponse, error) {
	for k := range ext {
		if strings.HasPrefix(k, KeyPrefix) && k != DenyKey && k != RedirectKey {
			return nil, fmt.Errorf("unknown context key %q", k)
		}
	}
	if v, ok := ext[DenyKey]; ok {
		code, err := strconv.Atoi(v)
		if err != nil {
			return nil, fmt.Errorf("context key %s: not an HTTP status", DenyKey)
		}
		resp, err := check.Deny(code, fmt.Sprintf("%d %s\n", code, http.StatusText(code)))
		if err != nil {
			return nil, fmt.Errorf("context key %s: %w", DenyKey, err)
		}
		return resp, nil
	}
	if v, ok := ext[RedirectKey]; ok {
		if err := validRedirect(v); err != nil {
			return nil, fmt.Errorf("context key %s: %w", RedirectKey, err)
		}
		return check.Redirect(v)
	}
	headers, err := check.ContextHeaders(ext, KeyPrefix)
	if err != nil {
		return nil, err
	}
	return check.Allow(req, append([]check.Header{{Name: HandlerHeader, Value: Name}}, headers...))
}

// validRedirect accepts an absolute http(s) URL with a host, or an
// absolute path on the same host. It rejects what browsers would read as
// another host ("//evil", "/\evil") and userinfo.
func validRedirect(loc string) error {
	if !check.ValidHeaderValue(loc) || strings.ContainsAny(loc, " \t\\") {
		return fmt.Errorf("not a valid Location value")
	}
	u, err := url.Parse(loc)
	if err != nil {
		return fmt.Errorf("not a URL")
	}
	switch {
	case u.User != nil:
		return fmt.Errorf("URL must not contain userinfo")
	case u.Scheme == "" && u.Host == "" && strings.HasPrefix(loc, "/") && !strings.HasPrefix(loc, "//"):
		return nil
	case (u.Scheme == "https" || u.Scheme == "http") && u.Host != "":
		return nil
	default:
		return fmt.Errorf("must be an absolute http(s) URL or an absolute path")
	}
}
