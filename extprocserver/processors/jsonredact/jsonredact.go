// Package jsonredact is the built-in processor that masks fields, chosen by
// JSON path, in JSON request and response bodies. It works on whole bodies
// (Envoy body mode BUFFERED, or BUFFERED_PARTIAL bodies that fit the
// buffer); streamed chunks, non-JSON content types and invalid JSON pass
// through untouched. The driver keeps Content-Length right.
package jsonredact

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"strings"

	"github.com/portcullis/portcullis/extprocserver/sdk"
)

// Config is the YAML of the jsonRedact processor.
type Config struct {
	// Request and Response list JSON paths to mask in each direction.
	Request  []string `json:"request,omitempty"`
	Response []string `json:"response,omitempty"`
	// Replacement is the string written in place of each match; default
	// "[REDACTED]".
	Replacement string `json:"replacement,omitempty"`
}

// Processor is the jsonRedact processor.
type Processor struct {
	sdk.Continue
	req, resp [][]segment
	repl      []byte
}

// New validates cfg.
func New(cfg Config) (*Processor, error) {
	var errs []error
	parse := func(where string, paths []string) [][]segment {
		var out [][]segment
		for _, p := range paths {
			s, err := parsePath(p)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", where, err))
				continue
			}
			out = append(out, s)
		}
		return out
	}
	p := &Processor{req: parse("request", cfg.Request), resp: parse("response", cfg.Response)}
	if len(cfg.Request) == 0 && len(cfg.Response) == 0 {
		errs = append(errs, errors.New("set at least one path in request or response"))
	}
	if cfg.Replacement == "" {
		cfg.Replacement = "[REDACTED]"
	}
	p.repl, _ = json.Marshal(cfg.Replacement)
	return p, errors.Join(errs...)
}

// redactAll applies paths to body; changed is false when nothing matched
// or body is not JSON.
func (p *Processor) redactAll(body []byte, paths [][]segment) (out []byte, changed bool) {
	if len(paths) == 0 || !json.Valid(body) {
		return body, false
	}
	out = body
	for _, s := range paths {
		if r, ch, err := redact(out, s, p.repl); err == nil && ch {
			out, changed = r, true
		}
	}
	return out, changed
}

func (p *Processor) process(b *sdk.Body, contentType string, paths [][]segment) {
	if len(paths) == 0 || !b.Whole() || !isJSON(contentType) {
		return
	}
	if out, changed := p.redactAll(b.Bytes(), paths); changed {
		b.Replace(out)
	}
}

// RequestBody redacts the request paths in a JSON request body.
func (p *Processor) RequestBody(_ context.Context, x *sdk.Exchange, b *sdk.Body) error {
	p.process(b, x.Request("content-type"), p.req)
	return nil
}

// ResponseBody redacts the response paths in a JSON response body.
func (p *Processor) ResponseBody(_ context.Context, x *sdk.Exchange, b *sdk.Body) error {
	p.process(b, x.Response("content-type"), p.resp)
	return nil
}

// isJSON accepts a missing content type (the JSON check decides) and any
// */json or */*+json type.
func isJSON(ct string) bool {
	if ct == "" {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	return strings.HasSuffix(mt, "/json") || strings.HasSuffix(mt, "+json")
}
