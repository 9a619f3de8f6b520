package oidc

import (
	"bytes"
	"fmt"
	"html/template"
	"net/http"
	"strings"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"

	"github.com/portcullis/portcullis/authserver/internal/check"
)

// errorPage is what a user sees when signing in or out fails: what
// happened, and a link to try again. The status is the failure's own.
type errorPage struct {
	status   int
	title    string // "Sign-in failed"
	message  string // what happened, for the user; escaped
	link     string // where "Sign in again" goes: a checked redirect target; "" is "/"
	linkText string // default "Sign in again"
}

// errorPageTemplate escapes every field by context (text, href): messages
// may quote what the request carried.
var errorPageTemplate = template.Must(template.New("error").Parse(`<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width"><title>{{.Title}}</title></head>
<body>
<h1>{{.Title}}</h1>
<p>{{.Message}}</p>
<p><a href="{{.Link}}">{{.LinkText}}</a></p>
<p><small>{{.Status}}</small></p>
</body>
</html>
`))

// respond answers the page as HTML, or as one line of plain text to a
// client that asked for JSON or is a script (XMLHttpRequest): those show
// no page. headers are added (Set-Cookie goes through withCookies).
func (p errorPage) respond(r *request, headers ...check.Header) (*authv3.CheckResponse, error) {
	status := fmt.Sprintf("%d %s", p.status, http.StatusText(p.status))
	if prefersPlainText(r) {
		return check.DenyWithHeaders(p.status, status+": "+p.message+"\n", append(headers, check.Header{Name: "Cache-Control", Value: "no-store"})...)
	}
	link, text := p.link, p.linkText
	if link == "" {
		link = "/"
	}
	if text == "" {
		text = "Sign in again"
	}
	var b bytes.Buffer
	err := errorPageTemplate.Execute(&b, map[string]string{
		"Title": p.title, "Message": p.message, "Link": link, "LinkText": text, "Status": status,
	})
	if err != nil {
		return nil, err
	}
	return check.Respond(p.status, b.String(), append(headers, pageHeaders...)...)
}

// pageHeaders go with every HTML page the server answers itself: not
// cached, not framed (no click stolen through an overlay), no script.
var pageHeaders = []check.Header{
	{Name: "Content-Type", Value: "text/html; charset=utf-8"},
	{Name: "Cache-Control", Value: "no-store"},
	{Name: "Content-Security-Policy", Value: "default-src 'none'; frame-ancestors 'none'"},
	{Name: "X-Frame-Options", Value: "DENY"},
	{Name: "X-Content-Type-Options", Value: "nosniff"},
}

// prefersPlainText tells scripts and API clients, which show no page,
// from browsers (which send text/html in Accept when navigating; a
// client that says nothing gets the page too).
func prefersPlainText(r *request) bool {
	if strings.EqualFold(r.header("x-requested-with"), "XMLHttpRequest") {
		return true
	}
	accept := strings.ToLower(r.header("accept"))
	return strings.Contains(accept, "application/json") && !strings.Contains(accept, "text/html")
}

// signInFailed is the page of a failed sign-in that returns to link.
func signInFailed(status int, message, link string) errorPage {
	return errorPage{status: status, title: "Sign-in failed", message: message, link: link}
}
