package tmpl

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/portcullis/portcullis/extprocserver/sdk"
	"github.com/portcullis/portcullis/extprocserver/sdk/sdktest"
)

// capture runs the templates in the response-headers phase of an exchange.
type capture struct {
	sdk.Continue
	templates []*Template
	got       []string
	errs      []error
}

func (c *capture) ResponseHeaders(_ context.Context, x *sdk.Exchange, _ *sdk.Headers) error {
	for _, t := range c.templates {
		v, err := t.Expand(x)
		c.got = append(c.got, v)
		c.errs = append(c.errs, err)
	}
	return nil
}

func TestExpand(t *testing.T) {
	cases := map[string]string{
		"":                                "",
		"plain":                           "plain",
		"cost $$5":                        "cost $5",
		"${method} ${path}":               "POST /a?b=1",
		"${authority}|${scheme}":          "app.example|https",
		"id=${request_id}":                "id=rid-7",
		"${status}":                       "201",
		"${request_header.X-User}":        "u1",
		"${response_header.content-type}": "text/plain",
		"${request_header.missing}-":      "-",
	}
	c := &capture{}
	var order []string
	for src := range cases {
		tpl, err := Parse(src)
		if err != nil {
			t.Fatalf("Parse(%q): %v", src, err)
		}
		c.templates = append(c.templates, tpl)
		order = append(order, src)
	}
	timing := []string{"${elapsed_ms}", "${elapsed_us}", "${start_unix_ms}"}
	for _, src := range timing {
		tpl, err := Parse(src)
		if err != nil {
			t.Fatal(err)
		}
		c.templates = append(c.templates, tpl)
	}
	s := sdktest.Open(t, sdktest.Serve(t, c))
	s.RoundTrip(sdktest.RequestHeaders(true, ":method", "POST", ":path", "/a?b=1", ":authority", "app.example", ":scheme", "https", "x-request-id", "rid-7", "x-user", "u1"))
	s.RoundTrip(sdktest.ResponseHeaders(true, ":status", "201", "content-type", "text/plain"))
	for i, src := range order {
		if c.errs[i] != nil || c.got[i] != cases[src] {
			t.Errorf("%q expanded to %q, %v; want %q", src, c.got[i], c.errs[i], cases[src])
		}
	}
	for i := range timing {
		v := c.got[len(order)+i]
		if v == "" || strings.TrimLeft(v, "0123456789") != "" {
			t.Errorf("%s expanded to %q, want a number", timing[i], v)
		}
	}
}

func TestParseErrors(t *testing.T) {
	long := strings.Repeat("v", sdk.MaxHeaderValue+1)
	for _, src := range []string{"$", "a $ b", "${", "${path", "${nope}", "${request_header.}", "${response_header.}", "$path",
		"a\r\nx-injected: 1", "a\nb", "a\x00", "${method}\r\n", "\x7f", long} {
		if _, err := Parse(src); err == nil {
			t.Errorf("Parse(%.40q) accepted", src)
		}
	}
}

// TestExpandRefusesInvalidValues: a variable can bring CR, LF or NUL, or
// make the value too long; Expand then fails instead of returning it.
func TestExpandRefusesInvalidValues(t *testing.T) {
	half := strings.Repeat("h", sdk.MaxHeaderValue/2+1)
	for _, tc := range []struct {
		src, header, value string
		ok                 bool
	}{
		{"<${request_header.x-in}>", "x-in", "a\tb", true},
		{"${request_header.x-in}${request_header.x-in}", "x-in", strings.Repeat("h", sdk.MaxHeaderValue/2), true},
		{"<${request_header.x-in}>", "x-in", "a\r\nx-injected: 1", false},
		{"<${request_header.x-in}>", "x-in", "a\nb", false},
		{"<${request_header.x-in}>", "x-in", "a\x00b", false},
		{"${request_header.x-in}${request_header.x-in}", "x-in", half, false},
		{"${path}", ":path", "/a\r\nb", false},
	} {
		t.Run(tc.src+" "+strconv.Quote(tc.value[:min(len(tc.value), 8)]), func(t *testing.T) {
			tpl, err := Parse(tc.src)
			if err != nil {
				t.Fatal(err)
			}
			c := &capture{templates: []*Template{tpl}}
			s := sdktest.Open(t, sdktest.Serve(t, c))
			kv := []string{":method", "GET", tc.header, tc.value}
			if tc.header != ":path" {
				kv = append(kv, ":path", "/")
			}
			s.RoundTrip(sdktest.RequestHeaders(true, kv...))
			s.RoundTrip(sdktest.ResponseHeaders(true, ":status", "200"))
			got, err := c.got[0], c.errs[0]
			switch {
			case tc.ok && err != nil:
				t.Errorf("refused: %v", err)
			case !tc.ok && (!errors.Is(err, ErrInvalidValue) || got != ""):
				t.Errorf("expanded to %.40q, %v; want ErrInvalidValue", got, err)
			}
		})
	}
}
