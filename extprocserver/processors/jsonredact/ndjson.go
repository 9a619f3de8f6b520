package jsonredact

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"

	"github.com/portcullis/portcullis/extprocserver/sdk"
)

// NDJSONConfig is the YAML of the ndjsonRedact processor: jsonRedact's
// paths, applied to each line of a newline-delimited JSON body.
type NDJSONConfig struct {
	Config `json:",inline"`
	// MaxLineBytes bounds the line held back while waiting for its
	// newline; default 1 MiB. A longer line fails the exchange (413 for a
	// request, 502 for a response) rather than pass unredacted.
	MaxLineBytes int `json:"maxLineBytes,omitempty"`
}

// DefaultMaxLineBytes is NDJSONConfig.MaxLineBytes when unset.
const DefaultMaxLineBytes = 1 << 20

// NDJSONProcessor is the ndjsonRedact processor. In FULL_DUPLEX_STREAMED
// body mode it redacts line by line as the body streams, holding back only
// the incomplete last line; a whole body (BUFFERED, or one chunk) is
// redacted at once. Other chunked bodies (STREAMED, BUFFERED_PARTIAL),
// content types other than NDJSON and lines that are not valid JSON pass
// through untouched.
type NDJSONProcessor struct {
	sdk.Continue
	p       *Processor
	maxLine int
}

// NewNDJSON validates cfg.
func NewNDJSON(cfg NDJSONConfig) (*NDJSONProcessor, error) {
	p, err := New(cfg.Config)
	if cfg.MaxLineBytes < 0 {
		err = errors.Join(err, fmt.Errorf("maxLineBytes %d: must be > 0", cfg.MaxLineBytes))
	}
	if cfg.MaxLineBytes == 0 {
		cfg.MaxLineBytes = DefaultMaxLineBytes
	}
	return &NDJSONProcessor{p: p, maxLine: cfg.MaxLineBytes}, err
}

// heldKey keeps, per direction, the incomplete line held back so far.
type heldKey struct{ phase sdk.Phase }

// RequestBody redacts the request paths in each complete line of an
// NDJSON request body.
func (n *NDJSONProcessor) RequestBody(_ context.Context, x *sdk.Exchange, b *sdk.Body) error {
	n.process(x, b, sdk.RequestBody, x.Request("content-type"), n.p.req)
	return nil
}

// ResponseBody redacts the response paths in each complete line of an
// NDJSON response body.
func (n *NDJSONProcessor) ResponseBody(_ context.Context, x *sdk.Exchange, b *sdk.Body) error {
	n.process(x, b, sdk.ResponseBody, x.Response("content-type"), n.p.resp)
	return nil
}

func (n *NDJSONProcessor) process(x *sdk.Exchange, b *sdk.Body, phase sdk.Phase, contentType string, paths [][]segment) {
	if len(paths) == 0 || !isNDJSON(contentType) {
		return
	}
	if b.Mode != sdk.ModeFullDuplex {
		if b.Whole() {
			if out, changed := n.p.redactLines(b.Bytes(), paths); changed {
				b.Replace(out)
			}
		}
		return
	}
	held, _ := x.Value(heldKey{phase}).([]byte)
	buf := b.Bytes()
	if len(held) > 0 {
		buf = append(held, buf...)
	}
	complete, rest := buf, []byte(nil)
	if !b.Last {
		i := bytes.LastIndexByte(buf, '\n')
		complete, rest = buf[:i+1], buf[i+1:]
	}
	if len(rest) > n.maxLine {
		status, what := http.StatusRequestEntityTooLarge, "request"
		if phase == sdk.ResponseBody {
			status, what = http.StatusBadGateway, "response"
		}
		// Fail closed: forwarding the line would pass it unredacted.
		x.Respond(sdk.TextResponse(status, fmt.Sprintf("%s body line longer than %d bytes cannot be redacted", what, n.maxLine)))
		return
	}
	// A copy: buf may share memory with this message's body.
	x.SetValue(heldKey{phase}, append([]byte(nil), rest...))
	out, _ := n.p.redactLines(complete, paths)
	b.Replace(out)
}

// redactLines redacts each line of data ("\n"-separated, an optional "\r"
// kept) that is valid JSON; out is data itself when nothing changed.
func (p *Processor) redactLines(data []byte, paths [][]segment) (out []byte, changed bool) {
	var b []byte
	rest := data
	for len(rest) > 0 {
		line, tail, nl := bytes.Cut(rest, []byte("\n"))
		body := bytes.TrimSuffix(line, []byte("\r"))
		r, ch := p.redactAll(body, paths)
		if ch && !changed {
			changed = true
			b = append(make([]byte, 0, len(data)+64), data[:len(data)-len(rest)]...)
		}
		if changed {
			b = append(b, r...)
			b = append(b, line[len(body):]...)
			if nl {
				b = append(b, '\n')
			}
		}
		rest = tail
	}
	if !changed {
		return data, false
	}
	return b, true
}

// isNDJSON accepts a missing content type (each line's JSON check decides)
// and the newline-delimited JSON types in use: */x-ndjson, */ndjson,
// */jsonl, */x-jsonl, */jsonlines, */x-jsonlines.
func isNDJSON(ct string) bool {
	if ct == "" {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	_, sub, _ := strings.Cut(mt, "/")
	switch strings.TrimPrefix(sub, "x-") {
	case "ndjson", "jsonl", "jsonlines":
		return true
	}
	return false
}
