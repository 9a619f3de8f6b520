package translator

import (
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// directResponse answers without an upstream; an empty body is none.
func directResponse(d *ir.DirectResponse) *routev3.DirectResponseAction {
	a := &routev3.DirectResponseAction{Status: d.Status}
	if d.Body != "" {
		a.Body = &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: d.Body}}
	}
	return a
}
