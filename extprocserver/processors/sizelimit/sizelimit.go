// Package sizelimit is the built-in processor that answers 413 Content Too
// Large when a request body exceeds a limit: at once from Content-Length,
// or while counting body bytes when the length is not declared (chunked).
package sizelimit

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/portcullis/portcullis/extprocserver/sdk"
)

// Config is the YAML of the sizeLimit processor.
type Config struct {
	// MaxRequestBytes is the largest request body allowed.
	MaxRequestBytes int64 `json:"maxRequestBytes"`
}

// Processor is the sizeLimit processor.
type Processor struct {
	sdk.Continue
	max int64
}

type seenKey struct{}

// New validates cfg.
func New(cfg Config) (*Processor, error) {
	if cfg.MaxRequestBytes <= 0 {
		return nil, errors.New("maxRequestBytes must be > 0")
	}
	return &Processor{max: cfg.MaxRequestBytes}, nil
}

func (p *Processor) tooLarge(x *sdk.Exchange) {
	r := sdk.TextResponse(http.StatusRequestEntityTooLarge, "request body larger than "+strconv.FormatInt(p.max, 10)+" bytes")
	r.Details = "portcullis_size_limit"
	x.Respond(r)
}

// RequestHeaders refuses a request whose Content-Length is over the limit.
func (p *Processor) RequestHeaders(_ context.Context, x *sdk.Exchange, h *sdk.Headers) error {
	if v := h.Get("content-length"); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > p.max {
			p.tooLarge(x)
		}
	}
	return nil
}

// RequestBody counts bytes across chunks (STREAMED) or sees the whole body
// (BUFFERED); it needs a request body mode other than NONE for chunked
// requests.
func (p *Processor) RequestBody(_ context.Context, x *sdk.Exchange, b *sdk.Body) error {
	seen, _ := x.Value(seenKey{}).(int64)
	seen += int64(len(b.Bytes()))
	x.SetValue(seenKey{}, seen)
	if seen > p.max {
		p.tooLarge(x)
	}
	return nil
}
