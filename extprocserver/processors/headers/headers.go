// Package headers is the built-in processor that sets, appends and removes
// request and response headers. Values are templates (see internal/tmpl):
// "${method} ${path}", "${request_id}", "${elapsed_ms}" ...
package headers

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/portcullis/portcullis/extprocserver/internal/tmpl"
	"github.com/portcullis/portcullis/extprocserver/sdk"
)

// Config is the YAML of the headers processor.
type Config struct {
	Request  Ops `json:"request,omitempty"`
	Response Ops `json:"response,omitempty"`
}

// Ops run in this order: remove, set (replace), append. Names in set and
// append are applied in sorted order.
type Ops struct {
	Set    map[string]string `json:"set,omitempty"`
	Append map[string]string `json:"append,omitempty"`
	Remove []string          `json:"remove,omitempty"`
}

type op struct {
	name  string
	value *tmpl.Template
}

type compiled struct {
	set, append []op
	remove      []string
}

func (o Ops) compile(where string) (compiled, error) {
	var c compiled
	var errs []error
	build := func(kind string, m map[string]string) []op {
		var out []op
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if err := checkName(k); err != nil {
				errs = append(errs, fmt.Errorf("%s.%s %q: %w", where, kind, k, err))
				continue
			}
			t, err := tmpl.Parse(m[k])
			if err != nil {
				errs = append(errs, fmt.Errorf("%s.%s %q: %w", where, kind, k, err))
				continue
			}
			out = append(out, op{name: strings.ToLower(k), value: t})
		}
		return out
	}
	c.set = build("set", o.Set)
	c.append = build("append", o.Append)
	for _, k := range o.Remove {
		if err := checkName(k); err != nil {
			errs = append(errs, fmt.Errorf("%s.remove %q: %w", where, k, err))
		}
		c.remove = append(c.remove, strings.ToLower(k))
	}
	return c, errors.Join(errs...)
}

// checkName rejects what Envoy would silently ignore or reject, so a typo
// fails at startup instead of doing nothing.
func checkName(k string) error {
	switch {
	case k == "":
		return errors.New("empty header name")
	case strings.HasPrefix(k, ":"), strings.EqualFold(k, "host"):
		return errors.New("pseudo-headers and host cannot be changed by ext_proc")
	case !sdk.ValidHeaderName(k):
		return errors.New("invalid header name: not an HTTP token")
	}
	return nil
}

// apply changes h. It fails when a value does not render to a valid
// header value, which fails the whole message (the driver sends none of
// its changes): fail closed rather than send a header that could split or
// inject others.
func (c compiled) apply(where string, x *sdk.Exchange, h *sdk.Headers) error {
	for _, k := range c.remove {
		h.Del(k)
	}
	for _, o := range c.set {
		v, err := o.value.Expand(x)
		if err != nil {
			return fmt.Errorf("headers: %s.set %s: %w", where, o.name, err)
		}
		h.Set(o.name, v)
	}
	for _, o := range c.append {
		v, err := o.value.Expand(x)
		if err != nil {
			return fmt.Errorf("headers: %s.append %s: %w", where, o.name, err)
		}
		h.Add(o.name, v)
	}
	return nil
}

// Processor is the headers processor.
type Processor struct {
	sdk.Continue
	req, resp compiled
}

// New validates cfg.
func New(cfg Config) (*Processor, error) {
	req, err1 := cfg.Request.compile("request")
	resp, err2 := cfg.Response.compile("response")
	if err := errors.Join(err1, err2); err != nil {
		return nil, err
	}
	return &Processor{req: req, resp: resp}, nil
}

// RequestHeaders applies the request rules.
func (p *Processor) RequestHeaders(_ context.Context, x *sdk.Exchange, h *sdk.Headers) error {
	return p.req.apply("request", x, h)
}

// ResponseHeaders applies the response rules.
func (p *Processor) ResponseHeaders(_ context.Context, x *sdk.Exchange, h *sdk.Headers) error {
	return p.resp.apply("response", x, h)
}
