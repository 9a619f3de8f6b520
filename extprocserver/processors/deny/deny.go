// Package deny is the built-in processor that answers requests matching
// path, method and header rules with an immediate response (403 by
// default) before they reach the upstream. Paths are matched normalised;
// a path that cannot be normalised safely satisfies every path condition
// (see match.NormalizePath).
package deny

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/portcullis/portcullis/extprocserver/match"
	"github.com/portcullis/portcullis/extprocserver/sdk"
)

// Config is the YAML of the deny processor. A request is denied when any
// rule matches.
type Config struct {
	Rules []match.Rule `json:"rules"`
	// Status of the response; default 403.
	Status int `json:"status,omitempty"`
	// Body of the response, plain text; default the status text.
	Body string `json:"body,omitempty"`
	// Headers added to the response.
	Headers map[string]string `json:"headers,omitempty"`
}

// processor is the deny processor.
type processor struct {
	sdk.Continue
	cfg Config
}

// New validates cfg and returns the deny processor.
func New(cfg Config) (sdk.Processor, error) {
	var errs []error
	if len(cfg.Rules) == 0 {
		errs = append(errs, errors.New("rules: at least one rule is required"))
	}
	for i := range cfg.Rules {
		if err := cfg.Rules[i].Compile(); err != nil {
			errs = append(errs, fmt.Errorf("rules[%d]: %w", i, err))
		}
	}
	if cfg.Status == 0 {
		cfg.Status = http.StatusForbidden
	}
	if cfg.Status < 200 || cfg.Status > 599 {
		errs = append(errs, fmt.Errorf("status %d: must be 200-599", cfg.Status))
	}
	if cfg.Body == "" {
		cfg.Body = http.StatusText(cfg.Status)
	}
	for k, v := range cfg.Headers {
		if !sdk.ValidHeaderName(k) {
			errs = append(errs, fmt.Errorf("headers %q: invalid header name: not an HTTP token", k))
		} else if err := sdk.CheckHeaderValue(v); err != nil {
			errs = append(errs, fmt.Errorf("headers %s: invalid value: %w", k, err))
		}
	}
	return &processor{cfg: cfg}, errors.Join(errs...)
}

// RequestHeaders answers the request itself when a rule matches it.
func (p *processor) RequestHeaders(_ context.Context, x *sdk.Exchange, h *sdk.Headers) error {
	path := match.RequestPath(h)
	for i := range p.cfg.Rules {
		// Fail closed: a path that cannot be normalised satisfies the
		// path condition, since we cannot tell what the upstream serves.
		if p.cfg.Rules[i].Match(h, path, match.UnsafePathMatches) {
			r := sdk.TextResponse(p.cfg.Status, p.cfg.Body)
			for k, v := range p.cfg.Headers {
				r.Headers.Set(k, v)
			}
			r.Details = fmt.Sprintf("portcullis_deny_rule_%d", i)
			if path.Err != nil && p.cfg.Rules[i].Path != nil {
				r.Details += "_unsafe_path"
			}
			x.Respond(r)
			return nil
		}
	}
	return nil
}
