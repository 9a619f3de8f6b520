package tmpl

import (
	"context"
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
}

func (c *capture) ResponseHeaders(_ context.Context, x *sdk.Exchange, _ *sdk.Headers) error {
	for _, t := range c.templates {
		c.got = append(c.got, t.Expand(x))
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
		if c.got[i] != cases[src] {
			t.Errorf("%q expanded to %q, want %q", src, c.got[i], cases[src])
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
	for _, src := range []string{"$", "a $ b", "${", "${path", "${nope}", "${request_header.}", "${response_header.}", "$path"} {
		if _, err := Parse(src); err == nil {
			t.Errorf("Parse(%q) accepted", src)
		}
	}
}
